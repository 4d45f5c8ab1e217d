import { nowSeconds, type TokenStore } from './token-store';

/** Creates a root token (`id` chooses its value, as `-dev-root-token-id` does): sys/init and sys/generate-root. */
export async function createRootToken(tokens: Pick<TokenStore, 'create'>, id?: string): Promise<string> {
  const now = nowSeconds();
  const { id: token } = await tokens.create(
    {
      parent: '',
      policies: ['root'],
      meta: null,
      displayName: 'root',
      numUses: 0,
      creationTime: now,
      lastRenewalTime: now,
      ttl: 0,
      explicitMaxTtl: 0,
      period: 0,
      renewable: false,
      type: 'service',
      namespace: '',
      role: '',
      path: 'auth/token/root',
      entityId: '',
    },
    id,
  );
  return token;
}
