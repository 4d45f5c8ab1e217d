import { ServiceError } from '@svc/api-contract';
import { callProvider, ProviderClientCache, type ProviderClients, type ProviderConfig } from './provider';

/**
 * Replaces the configured access key with a new one of the same user (Vault's rotate-root): the new
 * key is created and stored (`store`) before the old one is deleted with it, which proves it works.
 * The key must be the only one of its user, since IAM allows two. Answers the stored configuration.
 */
export async function rotateAccessKey<C extends ProviderConfig>(config: C | null, clients: ProviderClients, store: (rotated: C) => Promise<void>): Promise<C> {
  if (!config?.access_key || !config.secret_key) throw ServiceError.badRequest('Cannot call config/rotate-root when either access_key or secret_key is empty');
  const { iam, IAM, secrets } = clients;
  const user = await callProvider('rotate-root: read the root user', secrets, () => iam.send(new IAM.GetUserCommand({})));
  const userName = user.User?.UserName;
  const created = await callProvider('rotate-root: create an access key', secrets, () => iam.send(new IAM.CreateAccessKeyCommand({ UserName: userName })));
  const key = created.AccessKey;
  if (!key?.AccessKeyId || !key.SecretAccessKey) throw ServiceError.badGateway('rotate-root: the provider returned no access key');
  const rotated = { ...config, access_key: key.AccessKeyId, secret_key: key.SecretAccessKey };
  await store(rotated);
  const fresh = new ProviderClientCache();
  try {
    const next = await fresh.get(rotated);
    await callProvider('rotate-root: delete the old access key', [...secrets, ...next.secrets], () =>
      next.iam.send(new IAM.DeleteAccessKeyCommand({ UserName: userName, AccessKeyId: config.access_key })),
    );
  } finally {
    fresh.close();
  }
  return rotated;
}
