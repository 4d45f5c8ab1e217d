/**
 * The `svc` binary against a real server: status, operator init/unseal/seal, and the secret
 * commands, configured through SVC_ADDR, SVC_TOKEN and SVC_NAMESPACE as a user would.
 */
import { execFile, spawn } from 'node:child_process';
import { createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  PLAIN_LISTENER,
  SVC_BIN,
  createTestCa,
  eventually,
  runCli,
  startServerProcess,
  startTopology,
  type CliRun,
  type ServerProcess,
  type Topology,
} from '@svc/testing';
import { postgres } from './database-servers';

/** HOME of every command run here, so the token helper file (~/.svc-token) is the test's own. */
const home = mkdtempSync(path.join(tmpdir(), 'svc-cli-home-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

function svc(args: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  return runCli(args, { HOME: home, ...env }, stdin);
}

const REPOSITORY = path.dirname(path.dirname(SVC_BIN));

/**
 * The files `svc ARGS` loads, relative to the repository: the binary runs under `node -e` with a
 * hook that writes Node's module cache at exit (the compiled CLI loads its modules with require).
 */
async function loadedModules(args: string[], env: Record<string, string>): Promise<string[]> {
  const out = path.join(home, `loaded-${randomUUID()}.json`);
  const hook = [
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));`,
    `process.argv.splice(1, 0, ${JSON.stringify(SVC_BIN)});`,
    `require(${JSON.stringify(SVC_BIN)});`,
  ].join('\n');
  await promisify(execFile)(process.execPath, ['-e', hook, ...args], { env: { ...process.env, HOME: home, ...env } });
  return (JSON.parse(readFileSync(out, 'utf8')) as string[]).map((file) => path.relative(REPOSITORY, file));
}

/**
 * What a client command may load: the CLI's entry and command modules, the SDK and the small
 * shared API contract (errors, envelope, version), and the parser, edit distance and YAML
 * packages. Server code (Nest, pg, the engines, cloud SDKs, openpgp) is for `svc server` alone.
 */
const CLIENT_MODULES = [
  /^bin\/svc\.js$/,
  /^dist\/apps\/cli\/src\/(main|commands\/.+)\.js$/,
  /^dist\/(libs\/(sdk|api-contract)\/src|node_modules\/@svc\/(sdk|api-contract))\/[^/]+\.js$/,
  /^node_modules\/(yargs-parser|fastest-levenshtein|yaml)\//,
];
const notClientModules = (files: string[]) => files.filter((file) => !CLIENT_MODULES.some((allowed) => allowed.test(file)));

describe('svc CLI against a server', () => {
  let topology: Topology;
  let env: Record<string, string>;

  beforeAll(async () => {
    topology = await startTopology('all-in-one');
    env = { SVC_ADDR: topology.urls[0] };
  }, 120_000);

  afterAll(() => topology?.stop());

  test('status, operator init, unseal, secret commands and seal', async () => {
    const uninitialized = await svc(['status'], env);
    expect(uninitialized.code).toBe(2);
    expect(uninitialized.stdout).toMatch(/Initialized\s+false/);

    const init = await svc(['operator', 'init', '-key-shares=3', '-key-threshold=2', '-format=json'], env);
    expect(init.code).toBe(0);
    const { unseal_keys_b64: keys, root_token: rootToken } = JSON.parse(init.stdout) as { unseal_keys_b64: string[]; root_token: string };
    expect(keys).toHaveLength(3);

    expect((await svc(['operator', 'unseal', keys[0]], env)).stdout).toMatch(/Unseal Progress\s+1\/2/);
    expect((await svc(['operator', 'unseal'], env, `${keys[2]}\n`)).code).toBe(0);
    const unsealed = await svc(['status'], env);
    expect(unsealed.code).toBe(0);
    expect(unsealed.stdout).toMatch(/Sealed\s+false/);

    const authed = { ...env, SVC_TOKEN: rootToken };
    expect((await svc(['read', 'secret/app'], authed)).code).toBe(2);
    const write = await svc(['write', 'secret/app', 'user=alice', 'password=wonder'], authed);
    expect(write.code).toBe(0);
    const read = await svc(['read', '-format=json', 'secret/app'], authed);
    expect(JSON.parse(read.stdout).data).toEqual({ user: 'alice', password: 'wonder' });
    expect((await svc(['read', 'secret/app'], authed)).stdout).toMatch(/user\s+alice/);
    await svc(['write', 'secret/dir/nested', 'a=1'], authed);
    const list = await svc(['list', '-format=json', 'secret/'], authed);
    expect(JSON.parse(list.stdout)).toEqual(['app', 'dir/']);
    expect((await svc(['delete', 'secret/app'], authed)).code).toBe(0);
    expect((await svc(['read', 'secret/app'], authed)).code).toBe(2);

    const denied = await svc(['read', 'secret/dir/nested'], { ...env, SVC_TOKEN: 'wrong' });
    expect(denied.code).toBe(2);
    expect(denied.stderr).toMatch(/permission denied/);
    expect(denied.stderr).not.toContain('wrong');

    expect((await svc(['operator', 'seal'], authed)).code).toBe(0);
    expect((await svc(['status'], env)).code).toBe(2);
  });
});

describe('svc server -dev', () => {
  let dev: ServerProcess;

  afterEach(() => dev?.stop());

  test('starts initialized and unsealed with the given root token and kv version 2 at secret/', async () => {
    dev = await startServerProcess('dev', ['-dev', '-dev-root-token-id=dev-root', '-dev-listen-address=127.0.0.1:0']);
    const env = { SVC_ADDR: `http://${dev.addresses[0]}`, SVC_TOKEN: 'dev-root' };
    await eventually(async () => dev.logs.some((line) => line.includes('Root Token: dev-root')));
    expect(dev.logs.join('\n')).toMatch(/Unseal Key: \S+/);
    expect((await svc(['status'], env)).code).toBe(0);
    const mounts = await svc(['read', '-format=json', 'sys/mounts'], env);
    expect(JSON.parse(mounts.stdout).data['secret/'].options).toEqual({ version: '2' });
  });

  test('-dev-kv-v1 mounts secret/ as kv version 1', async () => {
    dev = await startServerProcess('dev', ['-dev', '-dev-kv-v1', '-dev-root-token-id=dev-root', '-dev-listen-address=127.0.0.1:0']);
    const env = { SVC_ADDR: `http://${dev.addresses[0]}`, SVC_TOKEN: 'dev-root' };
    const mounts = await svc(['read', '-format=json', 'sys/mounts'], env);
    expect(JSON.parse(mounts.stdout).data['secret/'].options).toEqual({ version: '1' });
  });
});

describe('svc login', () => {
  let dev: ServerProcess;

  afterAll(() => dev?.stop());

  test('userpass with the password on stdin writes ~/.svc-token (0600), which later commands use', async () => {
    dev = await startServerProcess('dev', ['-dev', '-dev-root-token-id=dev-root', '-dev-listen-address=127.0.0.1:0']);
    const env = { SVC_ADDR: `http://${dev.addresses[0]}` };
    const asRoot = { ...env, SVC_TOKEN: 'dev-root' };
    expect((await svc(['auth', 'enable', 'userpass'], asRoot)).stdout).toBe('Success! Enabled userpass auth method at: userpass/\n');
    expect((await svc(['auth', 'list'], asRoot)).stdout).toMatch(/^userpass\/\s+userpass\s+userpass_\S+/m);
    await svc(['write', 'sys/policies/acl/reader', 'policy=path "secret/data/*" { capabilities = ["read"] }'], asRoot);
    await svc(['write', 'auth/userpass/users/alice', 'password=wonder land', 'token_policies=reader'], asRoot);
    expect((await svc(['write', 'secret/data/app', '-'], asRoot, '{"data":{"colour":"blue"}}')).code).toBe(0);

    const login = await svc(['login', '-method=userpass', 'username=alice', 'password=-'], env, 'wonder land\n');
    expect([login.code, login.stderr]).toEqual([0, '']);
    expect(login.stdout).toMatch(/token_policies\s+\[reader default\]/);
    const tokenFile = path.join(home, '.svc-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(login.stdout).toContain(readFileSync(tokenFile, 'utf8'));
    expect(login.stdout).not.toContain('wonder land');

    const read = await svc(['read', '-format=json', 'secret/data/app'], env);
    expect([read.code, JSON.parse(read.stdout).data.data]).toEqual([0, { colour: 'blue' }]);
    expect((await svc(['write', 'secret/data/app', 'colour=red'], env)).stderr).toMatch(/permission denied/);

    const wrong = await svc(['login', '-method=userpass', 'username=alice', 'password=-'], env, 'guess\n');
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringContaining('invalid username or password')]);
    const byToken = await svc(['login', 'dev-root'], env);
    expect(byToken.code).toBe(0);
    expect(readFileSync(tokenFile, 'utf8')).toBe('dev-root');
  });
});

/**
 * The daily commands of an operator, as Vault's CLI has them, through a real server in both
 * topologies (in the distributed one transit and database run as their own services).
 */
describe.each(['all-in-one', 'distributed'] as const)('svc commands (%s)', (kind) => {
  let topology: Topology;
  let env: Record<string, string>;
  const run = async (args: string[], stdin = '') => {
    const result = await svc(args, env, stdin);
    if (result.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result.stdout;
  };

  /** TLS material: a CA with the server's and a client's certificates, and another CA. */
  const tlsDir = path.join(home, `tls-${kind}`);
  let tls: { ca: string; caDir: string; otherCa: string; clientCert: string; clientKey: string };
  /** The TLS listener, and the one that requires a client certificate signed by the CA. */
  let tlsUrl: string;
  let mutualTlsUrl: string;

  beforeAll(async () => {
    const ca = createTestCa(tlsDir, `svc cli ${kind} test CA`);
    const server = ca.issue('server', ['127.0.0.1']);
    const client = ca.issue('client', ['cli-client']);
    const caDir = path.join(tlsDir, 'ca-path');
    mkdirSync(caDir);
    copyFileSync(ca.caCert, path.join(caDir, 'ca.pem'));
    tls = { ca: ca.caCert, caDir, otherCa: createTestCa(path.join(tlsDir, 'other'), 'another CA').caCert, clientCert: client.cert, clientKey: client.key };
    const tlsListener = (extra: string) =>
      `listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_cert_file = "${server.cert}"\n  tls_key_file = "${server.key}"\n${extra}}\n`;
    topology = await startTopology(kind, {
      listeners: [PLAIN_LISTENER, tlsListener(''), tlsListener(`  tls_require_and_verify_client_cert = true\n  tls_client_ca_file = "${ca.caCert}"\n`)],
      ...(kind === 'distributed' && { services: ['transit', 'database'] }),
    });
    const [, tlsAddress, mutualTlsAddress] = topology.processes[0].addresses;
    tlsUrl = `https://${tlsAddress}`;
    mutualTlsUrl = `https://${mutualTlsAddress}`;
    const init = await svc(['operator', 'init', '-key-shares=1', '-key-threshold=1', '-format=json'], { SVC_ADDR: topology.urls[0] });
    const { unseal_keys_b64: keys, root_token: rootToken } = JSON.parse(init.stdout) as { unseal_keys_b64: string[]; root_token: string };
    await svc(['operator', 'unseal', keys[0]], { SVC_ADDR: topology.urls[0] });
    env = { SVC_ADDR: topology.urls[0], SVC_TOKEN: rootToken };
  }, 120_000);

  afterAll(() => topology?.stop());

  test("Vault's type names: kv-v2 enables kv version 2, aws the cloud engine and auth method", async () => {
    expect(await run(['secrets', 'enable', 'kv-v2'])).toBe('Success! Enabled the kv-v2 secrets engine at: kv-v2/\n');
    expect(await run(['kv', 'put', 'kv-v2/app', 'user=alice'])).toMatch(/^== Secret Path ==\nkv-v2\/data\/app\n/);
    expect(await run(['secrets', 'enable', 'aws'])).toBe('Success! Enabled the aws secrets engine at: aws/\n');
    expect(await run(['auth', 'enable', 'aws'])).toBe('Success! Enabled aws auth method at: aws/\n');
    const secrets = JSON.parse(await run(['secrets', 'list', '-format=json'])) as Record<string, { type: string; options: Record<string, string> | null }>;
    expect(secrets['kv-v2/']).toMatchObject({ type: 'kv', options: { version: '2' } });
    expect(secrets['aws/']).toMatchObject({ type: 'aws' });
    expect((JSON.parse(await run(['auth', 'list', '-format=json'])) as Record<string, { type: string }>)['aws/']).toMatchObject({ type: 'aws' });
    if (kind === 'all-in-one') {
      // The cloud engine and method serve the mounts: each keeps and reads back its configuration.
      await run(['write', 'aws/config/root', 'access_key=AKIAEXAMPLE', 'secret_key=example-secret', 'region=eu-west-1']);
      expect(JSON.parse(await run(['read', '-format=json', 'aws/config/root'])).data).toMatchObject({ access_key: 'AKIAEXAMPLE', region: 'eu-west-1' });
      await run(['write', 'auth/aws/config/client', 'access_key=AKIAEXAMPLE', 'secret_key=example-secret']);
      expect(JSON.parse(await run(['read', '-format=json', 'auth/aws/config/client'])).data).toMatchObject({ access_key: 'AKIAEXAMPLE' });
    } else {
      // This topology runs no cloud services: the mounts' requests go to them, and say so.
      expect((await svc(['read', 'aws/config/root'], env)).stderr).toContain('service "cloud" is unavailable');
      expect((await svc(['read', 'auth/aws/config/client'], env)).stderr).toContain('service "auth-cloud" is unavailable');
    }
    for (const path of ['secrets disable kv-v2', 'secrets disable aws', 'auth disable aws']) await run(path.split(' '));
  });

  test('kv: version 2 detected, versions, patch, delete and undelete, rollback, metadata; version 1 in place', async () => {
    expect(await run(['secrets', 'enable', '-path=kv2', '-version=2', 'kv'])).toBe('Success! Enabled the kv secrets engine at: kv2/\n');
    expect(await run(['kv', 'put', 'kv2/app', 'user=alice', 'password=one'])).toMatch(/^== Secret Path ==\nkv2\/data\/app\n\n== Metadata ==\n[^]*version\s+1\n$/);
    await run(['kv', 'patch', 'kv2/app', 'password=two']);
    expect(await run(['kv', 'get', '-field=password', 'kv2/app'])).toBe('two');
    expect(await run(['kv', 'get', '-version=1', '-field=password', 'kv2/app'])).toBe('one');
    expect(await run(['kv', 'get', 'kv2/app'])).toMatch(/== Data ==\nKey\s+Value\n---\s+-----\npassword\s+two\nuser\s+alice\n$/);
    expect(JSON.parse(await run(['kv', 'list', '-format=json', 'kv2/']))).toEqual(['app']);

    await run(['kv', 'delete', 'kv2/app']);
    expect((await svc(['kv', 'get', 'kv2/app'], env)).code).toBe(2);
    await run(['kv', 'undelete', '-versions=2', 'kv2/app']);
    await run(['kv', 'rollback', '-version=1', 'kv2/app']);
    expect(await run(['kv', 'get', '-mount=kv2', '-field=password', 'app'])).toBe('one');
    await run(['kv', 'destroy', '-versions=1', 'kv2/app']);
    await run(['kv', 'metadata', 'put', '-max-versions=5', '-custom-metadata=owner=ops', 'kv2/app']);
    const metadata = await run(['kv', 'metadata', 'get', 'kv2/app']);
    expect(metadata).toMatch(/max_versions\s+5\n/);
    expect(metadata).toMatch(/current_version\s+3\n/);
    expect(metadata).toMatch(/== Version 1 ==\n[^]*destroyed\s+true/);
    expect(await svc(['kv', 'metadata', 'get', '-format=yaml', 'kv2/app'], env)).toMatchObject({ code: 0, stdout: expect.stringContaining('owner: ops') });
    await run(['kv', 'metadata', 'delete', 'kv2/app']);
    expect((await svc(['kv', 'get', 'kv2/app'], env)).code).toBe(2);

    await run(['secrets', 'enable', '-path=old', '-version=1', 'kv']);
    expect(await run(['kv', 'put', 'old/app', 'a=b'])).toBe('Success! Data written to: old/app\n');
    expect(await run(['kv', 'get', 'old/app'])).toMatch(/^== Data ==\nKey\s+Value\n---\s+-----\na\s+b\n$/);
  });

  test('policies and tokens: a token made for a policy can do what it grants, and no more', async () => {
    await run(['secrets', 'enable', '-path=team', 'kv']);
    await run(['write', 'team/db', 'password=s3cret']);
    const policyFile = path.join(home, `reader-${kind}.hcl`);
    writeFileSync(policyFile, 'path "team/*" {\ncapabilities=["read","list"]\n}\n');
    expect(await run(['policy', 'fmt', policyFile])).toBe(`Success! Formatted policy: ${policyFile}\n`);
    expect(readFileSync(policyFile, 'utf8')).toBe('path "team/*" {\n  capabilities = ["read","list"]\n}\n');
    expect(await run(['policy', 'write', 'reader', policyFile])).toBe('Success! Uploaded policy: reader\n');
    expect(await run(['policy', 'read', 'reader'])).toContain('capabilities = ["read","list"]');
    expect((await run(['policy', 'list'])).split('\n')).toEqual(expect.arrayContaining(['default', 'reader', 'root']));

    const created = await run(['token', 'create', '-policy=reader', '-ttl=1h', '-metadata=team=ops']);
    expect(created).toMatch(/^token_duration\s+1h$/m);
    expect(created).toMatch(/^token_policies\s+\[reader default\]$/m);
    expect(created).toMatch(/^token_meta_team\s+ops$/m);
    const token = /^token\s+(\S+)$/m.exec(created)![1];
    const asReader = { ...env, SVC_TOKEN: token };
    expect((await svc(['read', '-field=password', 'team/db'], asReader)).stdout).toBe('s3cret');
    const refused = await svc(['write', 'team/db', 'password=x'], asReader);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('permission denied')]);
    expect(await run(['token', 'capabilities', token, 'team/db'])).toBe('list, read\n');
    expect(await run(['token', 'lookup', '-format=json', token])).toContain('"display_name"');
    expect(await run(['token', 'renew', '-increment=30m', token])).toMatch(/^token_duration\s+30m$/m);
    expect(await run(['token', 'revoke', token])).toBe('Success! Revoked token (if it existed)\n');
    expect((await svc(['read', 'team/db'], asReader)).code).toBe(2);
    expect(await run(['policy', 'delete', 'reader'])).toBe('Success! Deleted policy: reader\n');

    const anonymous = await svc(['read', 'team/db'], { SVC_ADDR: env.SVC_ADDR });
    expect(anonymous.stderr).toContain('Hint: no token was sent');
  });

  test('wrapping: a wrapped token is printed as wrap info, and unwrap prints what it wrapped once', async () => {
    const wrapped = await run(['token', 'create', '-policy=default', '-wrap-ttl=5m']);
    expect(wrapped).toMatch(/^wrapping_token_ttl:\s+5m$/m);
    const wrappingToken = /^wrapping_token:\s+(\S+)$/m.exec(wrapped)![1];
    expect(await run(['unwrap', wrappingToken])).toMatch(/^token_policies\s+\[default\]$/m);
    expect((await svc(['unwrap', wrappingToken], env)).code).toBe(2);

    await run(['write', 'cubbyhole/note', 'text=hello']);
    const secretToken = await run(['read', '-wrap-ttl=1m', '-field=wrapping_token', 'cubbyhole/note']);
    expect(await run(['write', 'sys/wrapping/unwrap', `token=${secretToken}`])).toMatch(/^text\s+hello$/m);
  });

  test('engines, auth methods, audit devices, namespaces and leases', async () => {
    await run(['secrets', 'enable', '-description=keys', 'transit']);
    await run(['secrets', 'tune', '-max-lease-ttl=2h', 'transit']);
    expect(await run(['secrets', 'list', '-detailed'])).toMatch(/^transit\/\s+transit\s+transit_\S+\s+system\s+2h\s+false\s+false\s+\{\}\s+keys$/m);
    await run(['write', '-f', 'transit/keys/orders']);
    expect(await run(['secrets', 'move', 'transit', 'crypto'])).toContain('Success! Finished moving transit/ to crypto/');
    expect(await run(['list', 'crypto/keys'])).toBe('Keys\n----\norders\n');
    expect(await run(['secrets', 'disable', 'crypto'])).toBe('Success! Disabled the secrets engine (if it existed) at: crypto/\n');

    await run(['auth', 'enable', '-path=people', 'userpass']);
    await run(['auth', 'tune', '-default-lease-ttl=30m', 'people']);
    expect(await run(['auth', 'list', '-detailed'])).toMatch(/^people\/\s+userpass\s+userpass_\S+\s+30m\s+system/m);
    expect(await run(['auth', 'disable', 'people'])).toBe('Success! Disabled the auth method (if it existed) at: people/\n');

    const auditLog = path.join(home, `audit-${kind}.log`);
    expect(await run(['audit', 'enable', 'file', `file_path=${auditLog}`])).toBe('Success! Enabled the file audit device at: file/\n');
    expect(await run(['audit', 'list'])).toMatch(/^file\/\s+file\s+n\/a$/m);
    expect(await run(['audit', 'disable', 'file'])).toBe('Success! Disabled audit device (if it was enabled) at: file/\n');

    expect(await run(['namespace', 'create', 'eng'])).toMatch(/^path\s+eng\/$/m);
    expect(await run(['namespace', 'list'])).toBe('Keys\n----\neng/\n');
    await run(['secrets', 'enable', '-ns=eng', 'kv']);
    expect(await run(['secrets', 'list', '-namespace=eng'])).toMatch(/^kv\/\s+kv/m);
    expect(await run(['namespace', 'delete', 'eng'])).toBe('Success! Namespace deleted at: eng/\n');

    await run(['secrets', 'enable', 'database']);
    const { connection, createStatements } = postgres;
    await run(['write', 'database/config/pg', '-'], JSON.stringify({ ...connection, allowed_roles: 'app' }));
    await run(['write', 'database/roles/app', 'db_name=pg', `creation_statements=${createStatements[0]}`, 'default_ttl=10m', 'max_ttl=1h']);
    const creds = await run(['read', 'database/creds/app']);
    const leaseId = /^lease_id\s+(\S+)$/m.exec(creds)![1];
    expect(creds).toMatch(/^lease_duration\s+10m$/m);
    expect(await run(['lease', 'lookup', leaseId])).toMatch(/^renewable\s+true$/m);
    expect(await run(['lease', 'renew', '-increment=20m', leaseId])).toMatch(/^lease_duration\s+20m$/m);
    expect(await run(['lease', 'revoke', leaseId])).toBe(`Success! Revoked lease: ${leaseId}\n`);
    expect((await svc(['lease', 'lookup', leaseId], env)).code).toBe(2);
  });

  test('a client command loads only the CLI, the SDK and its small packages, no server code', async () => {
    expect(notClientModules(await loadedModules(['version'], {}))).toEqual([]);
    await run(['secrets', 'enable', '-path=loaded', '-version=2', 'kv']);
    await run(['kv', 'put', 'loaded/app', 'a=b']);
    const kvGet = await loadedModules(['kv', 'get', 'loaded/app'], env);
    expect(notClientModules(kvGet)).toEqual([]);
    // Of the commands, only the one that runs is loaded.
    expect(kvGet.filter((file) => /commands\/(?!(index|args|context|registry|token-file|format|paths)\.js$)/.test(file)).sort()).toEqual([
      'dist/apps/cli/src/commands/kv/get.js',
      'dist/apps/cli/src/commands/kv/kv-path.js',
    ]);
  });

  test('transit import and import-version: key material made here encrypts at the server and decrypts here', async () => {
    await run(['secrets', 'enable', '-path=byok', 'transit']);
    const first = randomBytes(32);
    const keyFile = path.join(home, `byok-${kind}.b64`);
    writeFileSync(keyFile, `${first.toString('base64')}\n`, { mode: 0o600 });
    const imported = await run(['transit', 'import', 'byok/keys/orders', `@${keyFile}`, 'type=aes256-gcm96']);
    expect(imported).toMatch(/^imported\s+true$/m);
    expect(imported).toMatch(/^type\s+aes256-gcm96$/m);
    const encrypt = async () => JSON.parse(await run(['write', '-format=json', 'byok/encrypt/orders', `plaintext=${Buffer.from('card 4111').toString('base64')}`])).data.ciphertext as string;
    const v1 = await encrypt();
    expect(v1).toMatch(/^svc:v1:/);
    expect(openLocally(first, v1)).toBe('card 4111');

    const second = randomBytes(32);
    await run(['transit', 'import-version', 'byok/keys/orders', '-'], second.toString('base64'));
    const v2 = await encrypt();
    expect(v2).toMatch(/^svc:v2:/);
    expect(openLocally(second, v2)).toBe('card 4111');
    expect(JSON.parse(await run(['read', '-format=json', 'byok/keys/orders'])).data).toMatchObject({ imported: true, latest_version: 2 });

    const notBase64 = await svc(['transit', 'import', 'byok/keys/other', 'not-base64!'], env);
    expect([notBase64.code, notBase64.stderr]).toEqual([1, expect.stringContaining('KEY must be base64-encoded key material')]);
    expect(notBase64.stderr).not.toContain('not-base64!');
    const badPath = await svc(['transit', 'import', 'byok/orders', first.toString('base64')], env);
    expect([badPath.code, badPath.stderr]).toEqual([1, expect.stringContaining('PATH must be MOUNT/keys/NAME')]);
    const existing = await svc(['transit', 'import', 'byok/keys/orders', second.toString('base64')], env);
    expect(existing.code).toBe(2);
    expect(existing.stderr).not.toContain(second.toString('base64'));
  });

  test('TLS: -ca-cert, SVC_CACERT, -ca-path, a client certificate where the listener requires one, -tls-skip-verify', async () => {
    const token = { SVC_TOKEN: env.SVC_TOKEN };
    const over = async (flags: string[], extra: Record<string, string>) => svc(['read', ...flags, '-format=json', 'sys/mounts'], { ...token, ...extra });
    const succeeded = (result: CliRun) => [result.code, result.stderr];
    expect(succeeded(await over([`-ca-cert=${tls.ca}`], { SVC_ADDR: tlsUrl }))).toEqual([0, '']);
    expect(succeeded(await over([], { SVC_ADDR: tlsUrl, SVC_CACERT: tls.ca }))).toEqual([0, '']);
    expect(succeeded(await over([`-address=${tlsUrl}`, `-ca-path=${tls.caDir}`], {}))).toEqual([0, '']);
    expect(succeeded(await over(['-tls-skip-verify'], { SVC_ADDR: tlsUrl }))).toEqual([0, '']);

    // A CA that did not sign the server's certificate, or none: a clear error, exit 2, at once (not retried).
    for (const refused of [await over([`-ca-cert=${tls.otherCa}`], { SVC_ADDR: tlsUrl }), await over([], { SVC_ADDR: tlsUrl })]) {
      expect([refused.code, refused.stdout]).toEqual([2, '']);
      expect(refused.stderr).toMatch(new RegExp(`^Error: cannot reach ${tlsUrl}: .*certificate`, 'm'));
    }

    const clientFlags = [`-client-cert=${tls.clientCert}`, `-client-key=${tls.clientKey}`];
    expect(succeeded(await over([`-ca-cert=${tls.ca}`, ...clientFlags], { SVC_ADDR: mutualTlsUrl }))).toEqual([0, '']);
    expect(succeeded(await over([], { SVC_ADDR: mutualTlsUrl, SVC_CACERT: tls.ca, SVC_CLIENT_CERT: tls.clientCert, SVC_CLIENT_KEY: tls.clientKey }))).toEqual([0, '']);
    const anonymous = await over([`-ca-cert=${tls.ca}`], { SVC_ADDR: mutualTlsUrl });
    expect([anonymous.code, anonymous.stderr]).toEqual([2, expect.stringMatching(/^Error: cannot reach .*certificate/m)]);
    const halfPair = await over([`-ca-cert=${tls.ca}`, clientFlags[0]], { SVC_ADDR: mutualTlsUrl });
    expect([halfPair.code, halfPair.stderr]).toEqual([1, expect.stringContaining('-client-cert and -client-key go together')]);
  });

  test('operator key-status and rotate, version, path-help, print token', async () => {
    const term = Number(/^Key Term\s+(\d+)$/m.exec(await run(['operator', 'key-status']))![1]);
    expect(await run(['operator', 'rotate'])).toMatch(new RegExp(`^Success! Rotated key\n\n[^]*Key Term\\s+${term + 1}\n`));
    expect(await run(['version'])).toMatch(/^Secrets Service v\d+\.\d+\.\d+\n$/);
    expect(await run(['path-help', 'sys/mounts'])).toContain('mount');
    expect(await run(['print', 'token'])).toBe(`${env.SVC_TOKEN}\n`);
  });
});

/** Opens transit's AES-256-GCM ciphertext (`svc:v<n>:` base64 of nonce ‖ ciphertext ‖ tag) with the raw key. */
function openLocally(key: Buffer, ciphertext: string): string {
  const sealed = Buffer.from(ciphertext.replace(/^svc:v\d+:/, ''), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8');
}

describe('svc server -h and svc cluster -h', () => {
  test('print their usage and exit 0', async () => {
    const server = await svc(['server', '-h'], {});
    expect([server.code, server.stdout]).toEqual([0, expect.stringContaining('Usage: svc server [options]')]);
    const cluster = await svc(['cluster', '-help'], {});
    expect([cluster.code, cluster.stdout]).toEqual([0, expect.stringContaining('Usage: svc cluster')]);
  });
});

describe('svc server -service', () => {
  test('names exactly the services that exist, in its usage and when refusing another', async () => {
    const refused = await svc(['server', '-dev', '-service=scheduler'], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error: unknown service "scheduler"; expected one of gateway, replication, auth-cloud, cloud, database, snapshot, sync, transit\n');
    expect(refused.stderr).toContain('-service=NAME                 Run one app of the distributed topology: gateway, replication, auth-cloud, cloud, database, snapshot, sync, transit\n');
    // The replication service runs beside gateways over NATS: without a bus it says so.
    const alone = await svc(['server', '-dev', '-service=replication'], {});
    expect([alone.code, alone.stderr]).toEqual([1, 'Error starting the server: the replication service needs a bus "nats" stanza in its configuration\n']);
  });
});

describe('svc server -workers', () => {
  test.each(['0', 'two', '1.5', '257'])('refuses -workers=%s, naming the flag', async (value) => {
    const refused = await svc(['server', '-dev', `-workers=${value}`], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error: flag -workers must be a whole number from 1 to 256\n');
  });
});

describe('svc cluster', () => {
  test('starts the distributed topology, initialized, and stops it on SIGINT', async () => {
    const child = spawn(process.execPath, [SVC_BIN, 'cluster', '-gateways=1', '-services=transit'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    try {
      await eventually(async () => /Root Token: \S+/.test(output), 60_000);
      // The children's log lines are shown, after their process's name.
      expect(output).toMatch(/^\[gateway-0\] \{.*"msg":"gateway started"/m);
      const gateway = /Gateways: (\S+)/.exec(output)![1];
      const rootToken = /Root Token: (\S+)/.exec(output)![1];
      const status = await svc(['read', '-format=json', 'sys/mounts'], { SVC_ADDR: gateway, SVC_TOKEN: rootToken });
      expect(status.code).toBe(0);
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    }
  });
});
