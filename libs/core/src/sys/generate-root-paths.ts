import type { PathDeclaration } from '@svc/framework';
import type { Core } from '../core';

/**
 * sys/generate-root/*: a threshold of unseal (Shamir) or recovery (auto-unseal) shares creates a
 * root token. Unauthenticated as in Vault: the shares are the authorization.
 */
export function generateRootPaths(core: Core): PathDeclaration[] {
  return [
    {
      pattern: 'generate-root/attempt',
      synopsis: 'Starts, reads or cancels a root token generation.',
      description:
        'Without `pgp_key` the answer that starts the attempt carries a one-time pad (`otp`), shown only then; the finished token comes back XORed with it (`svc operator generate-root -decode`). With `pgp_key` it comes back encrypted to that key.',
      fields: { pgp_key: { type: 'string', description: 'Base64 PGP public key to encrypt the new root token with.' } },
      operations: {
        read: { summary: 'Read the progress.', unauthenticated: true, handler: async () => ({ raw: await core.generateRoot.status() }) },
        update: {
          summary: 'Start a root token generation.',
          unauthenticated: true,
          handler: async (_req, f) => ({ raw: await core.generateRoot.start(f.get<string>('pgp_key') || undefined) }),
        },
        delete: {
          summary: 'Cancel the generation.',
          unauthenticated: true,
          handler: async () => {
            await core.generateRoot.cancel();
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'generate-root/update',
      synopsis: 'Submits one share to the root token generation in progress.',
      description: 'The threshold-th share, when the set is right, returns `encoded_token`. A wrong set resets the progress.',
      fields: {
        key: { type: 'string', required: true, sensitive: true, description: 'One unseal or recovery key share (hex or base64).' },
        nonce: { type: 'string', required: true, description: 'Nonce of the attempt, from its status.' },
      },
      operations: {
        update: {
          summary: 'Submit a share.',
          unauthenticated: true,
          handler: async (_req, f) => ({ raw: await core.generateRoot.update(f.get('key'), f.get('nonce')) }),
        },
      },
    },
  ];
}
