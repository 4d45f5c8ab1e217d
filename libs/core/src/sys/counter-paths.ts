import type { PathDeclaration } from '@svc/framework';
import type { TokenStore } from '../tokens/token-store';

/** What the counter paths use of the core. */
export interface CounterPathsDeps {
  tokens: Pick<TokenStore, 'allAccessors'>;
}

/**
 * sys/internal/counters: the counts this server can give exactly. Service tokens are counted
 * (batch tokens are not stored, as in Vault); entity and client-activity counters need an identity
 * store and activity log, which this server does not have, so those paths are not served.
 */
export function counterPaths(core: CounterPathsDeps): PathDeclaration[] {
  return [
    {
      pattern: 'internal/counters/tokens',
      synopsis: 'Counts the live service tokens.',
      operations: {
        read: {
          summary: 'Count service tokens.',
          rootNamespace: true,
          handler: async () => ({ data: { counters: { service_tokens: { total: (await core.tokens.allAccessors()).length } } } }),
        },
      },
    },
  ];
}
