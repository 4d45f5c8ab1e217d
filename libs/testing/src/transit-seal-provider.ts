import { api } from './http';

const SEAL_POLICY = (key: string) => `path "transit/encrypt/${key}" { capabilities = ["update"] }\npath "transit/decrypt/${key}" { capabilities = ["update"] }\n`;

/**
 * Makes an unsealed Secrets Service at `url` a transit seal's provider: a transit engine, the key
 * `keyName`, and a renewable token (returned) allowed only to encrypt and decrypt with it.
 */
export async function prepareTransitSealProvider(url: string, rootToken: string, keyName = 'autounseal'): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = async (method: string, where: string, body: unknown): Promise<Record<string, any>> => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const res = await api<Record<string, any>>(url, method, `/v1/${where}`, { body, token: rootToken });
    if (res.status >= 300) throw new Error(`${where}: ${res.status} ${res.text}`);
    return res.body;
  };
  await call('POST', 'sys/mounts/transit', { type: 'transit' });
  await call('POST', `transit/keys/${keyName}`, {});
  await call('PUT', `sys/policies/acl/${keyName}`, { policy: SEAL_POLICY(keyName) });
  const created = await call('POST', 'auth/token/create', { policies: [keyName], ttl: '1h', no_default_policy: true });
  return created.auth.client_token as string;
}
