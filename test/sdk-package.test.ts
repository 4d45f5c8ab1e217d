/**
 * The SDK as a user installs it: `npm pack` of libs/sdk gives a package with type declarations and
 * no reference to the project's own libs; its tests import the packed package (type-checked by tsc
 * and run) against a real server.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { startTopology, type Topology } from '@svc/testing';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

describe('the packed SDK', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-sdk-pack-'));
  const installed = path.join(dir, 'app', 'node_modules', '@secrets-service', 'sdk');
  let topology: Topology;
  let sdk: typeof import('@svc/sdk');

  beforeAll(async () => {
    await run('npm', ['pack', '--pack-destination', dir], { cwd: path.join(ROOT, 'libs', 'sdk') });
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'))!;
    mkdirSync(installed, { recursive: true });
    await run('tar', ['xzf', path.join(dir, tarball), '-C', installed, '--strip-components=1']);
    sdk = (await import(installed)) as typeof import('@svc/sdk');
    topology = await startTopology('all-in-one');
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(path.join(ROOT, 'libs', 'sdk', 'dist'), { recursive: true, force: true });
  });

  test('holds its README, compiled code and declarations only, which type-check in a project of its own', async () => {
    expect(readdirSync(installed).sort()).toEqual(['README.md', 'dist', 'package.json']);
    const files = readdirSync(path.join(installed, 'dist')).sort();
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'client.d.ts', 'areas.d.ts', 'types.d.ts']));
    expect(files.some((name) => name.includes('spec'))).toBe(false);
    writeFileSync(
      path.join(dir, 'app', 'check.ts'),
      [
        "import { SvcClient, type KvSecret } from '@secrets-service/sdk';",
        "const client = new SvcClient({ address: 'https://vault.example:8200', namespace: 'team', timeoutMs: 5000, maxRetries: 1, tls: { ca: 'PEM' } });",
        "const fromEnv: SvcClient = SvcClient.fromEnv({ timeoutMs: 5000 });",
        'void fromEnv;',
        "async function main(): Promise<string> {",
        "  const secret: KvSecret<{ password: string }> | null = await client.kv('secret').get<{ password: string }>('app');",
        "  const ciphertext: string = await client.transit().encrypt('orders', 'text');",
        "  return `${secret?.data.password}${ciphertext}${(await client.tokens.create({ policies: ['a'] })).client_token}`;",
        '}',
        'void main;',
        // A wrong use must fail the check, or it proves nothing.
        '// @ts-expect-error the kv path is a string',
        'void client.kv().get(42);',
      ].join('\n'),
    );
    const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
    const typeRoots = path.join(ROOT, 'node_modules', '@types');
    await expect(
      run(tsc, ['--noEmit', '--strict', '--module', 'commonjs', '--moduleResolution', 'node', '--target', 'ES2022', '--types', 'node', '--typeRoots', typeRoots, 'check.ts'], { cwd: path.join(dir, 'app') }),
    ).resolves.toBeDefined();
  }, 60_000);

  test('drives the server through its typed helpers: sys, kv version 2, tokens, logins, transit, wrapping', async () => {
    // Configured as Vault's clients are, by VAULT_ADDR.
    const client = sdk.SvcClient.fromEnv({}, { VAULT_ADDR: topology.urls[0] });
    const { keys, root_token: rootToken } = await client.sys.init({ secret_shares: 1, secret_threshold: 1 });
    await client.sys.unseal(keys[0]);
    const root = client.withToken(rootToken);
    await root.sys.enableMount('kv2', { type: 'kv', options: { version: '2' } });
    await root.sys.enableMount('transit', { type: 'transit' });

    const kv = root.kv('kv2');
    expect((await kv.put('app', { password: 'one' })).version).toBe(1);
    expect((await kv.patch('app', { user: 'alice' })).version).toBe(2);
    expect(await kv.get('app')).toMatchObject({ data: { password: 'one', user: 'alice' }, metadata: { version: 2 } });
    await expect(kv.put('app', { password: 'two' }, 1)).rejects.toMatchObject({ status: 400 });
    await kv.delete('app');
    expect(await kv.get('app')).toBeNull();
    await kv.undelete('app', [2]);
    expect(await kv.list()).toEqual(['app']);

    await root.write('sys/policies/acl/reader', { policy: 'path "kv2/data/*" { capabilities = ["read"] }' });
    await root.write('sys/auth/userpass', { type: 'userpass' });
    await root.write('auth/userpass/users/alice', { password: 'wonder', token_policies: 'reader' });
    const login = await client.logins.userpass('alice', 'wonder');
    const alice = client.withToken(login.client_token);
    expect((await alice.kv('kv2').get<{ user: string }>('app'))?.data.user).toBe('alice');
    await expect(alice.kv('kv2').put('app', { user: 'mallory' })).rejects.toBeInstanceOf(sdk.SvcApiError);
    expect(((await alice.tokens.lookupSelf()).policies as string[]).slice().sort()).toEqual(['default', 'reader']);
    const child = await root.tokens.create({ policies: ['reader'], ttl: '1h' });
    expect(child.lease_duration).toBe(3600);
    await root.tokens.revoke(child.client_token);
    await expect(client.withToken(child.client_token).tokens.lookupSelf()).rejects.toMatchObject({ status: 403 });

    const transit = root.transit();
    await transit.createKey('orders');
    const ciphertext = await transit.encrypt('orders', 'card 4111');
    await transit.rotate('orders');
    const rewrapped = await transit.rewrap('orders', ciphertext);
    expect(rewrapped).toMatch(/^svc:v2:/);
    expect((await transit.decrypt('orders', rewrapped)).toString()).toBe('card 4111');

    const wrap = await root.wrapping.wrap({ handoff: 'secret' }, '5m');
    expect(wrap.ttl).toBe(300);
    expect((await root.wrapping.unwrap(wrap.token)).data).toEqual({ handoff: 'secret' });
  });
});
