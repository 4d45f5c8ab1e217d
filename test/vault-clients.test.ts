/**
 * Applications written for Vault move over unchanged: the `node-vault` client's own methods, which
 * send Vault's header names (X-Vault-Token, X-Vault-Namespace, X-Vault-Wrap-TTL), against a real
 * server, with no header rewriting; and transit ciphertext written with Vault's `vault:v<n>:` prefix
 * decrypts and rewraps.
 */
import nodeVault from 'node-vault';
import { startTopology, type Topology } from '@svc/testing';

describe('node-vault against the server', () => {
  let topology: Topology;
  let vault: nodeVault.client;
  let rootToken: string;

  beforeAll(async () => {
    topology = await startTopology('all-in-one');
    const client = nodeVault({ apiVersion: 'v1', endpoint: topology.urls[0] });
    const init = await client.init({ secret_shares: 1, secret_threshold: 1 });
    await client.unseal({ key: init.keys[0], secret_shares: 1 });
    rootToken = init.root_token;
  }, 60_000);

  // node-vault's clients share request settings: a client made for another token changes what an
  // earlier one sends, so each test makes its root client afresh.
  beforeEach(() => {
    vault = nodeVault({ apiVersion: 'v1', endpoint: topology.urls[0], token: rootToken });
  });

  afterAll(() => topology?.stop());

  test('status, mounts, kv version 2, policies and tokens through X-Vault-Token', async () => {
    expect(await vault.status()).toMatchObject({ initialized: true, sealed: false });
    await vault.mount({ mount_point: 'apps', type: 'kv', options: { version: '2' } });
    await vault.write('apps/data/app', { data: { password: 's3cret' } });
    expect((await vault.read('apps/data/app')).data.data).toEqual({ password: 's3cret' });
    expect((await vault.list('apps/metadata/')).data.keys).toEqual(['app']);

    await vault.addPolicy({ name: 'reader', rules: 'path "apps/data/*" { capabilities = ["read"] }' });
    const created = await vault.tokenCreate({ policies: ['reader'] });
    const reader = nodeVault({ apiVersion: 'v1', endpoint: topology.urls[0], token: created.auth.client_token });
    expect(((await reader.tokenLookupSelf()).data.policies as string[]).slice().sort()).toEqual(['default', 'reader']);
    expect((await reader.read('apps/data/app')).data.data.password).toBe('s3cret');
    await expect(reader.write('apps/data/app', { data: { password: 'changed' } })).rejects.toMatchObject({ response: { statusCode: 403 } });
  });

  test('X-Vault-Namespace reaches the namespace, X-Vault-Wrap-TTL wraps, and unwrap returns the secret once', async () => {
    await vault.write('sys/namespaces/team', {});
    const team = nodeVault({ apiVersion: 'v1', endpoint: topology.urls[0], token: vault.token, namespace: 'team' });
    await team.mount({ mount_point: 'kv', type: 'kv' });
    await team.write('kv/app', { colour: 'blue' });
    expect((await team.read('kv/app')).data).toEqual({ colour: 'blue' });
    await expect(vault.read('kv/app')).rejects.toMatchObject({ response: { statusCode: 404 } });

    const wrapped = await vault.write('sys/wrapping/wrap', { password: 'inside' }, { headers: { 'X-Vault-Wrap-TTL': '5m' } });
    expect(wrapped.wrap_info.ttl).toBe(300);
    expect((await vault.unwrap({ token: wrapped.wrap_info.token })).data).toEqual({ password: 'inside' });
    await expect(vault.unwrap({ token: wrapped.wrap_info.token })).rejects.toMatchObject({ response: { statusCode: 400 } });
  });

  test('transit encrypts, and decrypts and rewraps ciphertext with Vault\'s vault:v<n>: prefix', async () => {
    await vault.mount({ mount_point: 'transit', type: 'transit' });
    await vault.transitCreateKey({ name: 'orders' });
    const plaintext = Buffer.from('card 4111').toString('base64');
    const { ciphertext } = (await vault.encryptData({ name: 'orders', plaintext })).data as { ciphertext: string };
    expect(ciphertext).toMatch(/^svc:v1:/);
    const fromVault = ciphertext.replace(/^svc:/, 'vault:');
    expect((await vault.decryptData({ name: 'orders', ciphertext: fromVault })).data.plaintext).toBe(plaintext);
    await vault.write('transit/keys/orders/rotate', {});
    const rewrapped = (await vault.rewrapData({ name: 'orders', ciphertext: fromVault })).data.ciphertext as string;
    expect(rewrapped).toMatch(/^svc:v2:/);
    expect((await vault.decryptData({ name: 'orders', ciphertext: rewrapped })).data.plaintext).toBe(plaintext);
    await expect(vault.decryptData({ name: 'orders', ciphertext: 'vault:v1:not base64!' })).rejects.toMatchObject({ response: { statusCode: 400 } });
  });
});
