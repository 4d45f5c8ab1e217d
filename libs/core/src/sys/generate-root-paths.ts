import type { PathDeclaration } from '@svc/framework';
import { shareGenerationPaths, type ShareGeneration } from '@svc/seal';

/** What the generate-root paths use of the core: the root token's generation. */
export interface GenerateRootPathsDeps {
  ceremonies: { readonly generateRoot: ShareGeneration };
}

/**
 * sys/generate-root/*: a threshold of unseal (Shamir) or recovery (auto-unseal) shares creates a
 * root token. Unauthenticated as in Vault: the shares are the authorization.
 */
export function generateRootPaths(core: GenerateRootPathsDeps): PathDeclaration[] {
  return shareGenerationPaths('generate-root', core.ceremonies.generateRoot, { token: 'root token', decode: '`svc operator generate-root -decode`' });
}
