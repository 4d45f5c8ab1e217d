/**
 * The `svc` binary against a real server: status, operator init/unseal/seal, and the secret
 * commands, configured through SVC_ADDR, SVC_TOKEN and SVC_NAMESPACE as a user would.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SVC_BIN, eventually, runCli, startServerProcess, startTopology, type CliRun, type ServerProcess, type Topology } from '@svc/testing';
import { postgres } from './database-servers';

/** HOME of every command run here, so the token helper file (~/.svc-token) is the test's own. */
const home = mkdtempSync(path.join(tmpdir(), 'svc-cli-home-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

function svc(args: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  return runCli(args, { HOME: home, ...env }, stdin);
}

describe('svc CLI against a server', () => {
  let topology: Topology;
  let env: Record<string, string>;

  beforeAll(async () => {
    topology = await startTopology('all-in-one');
    env = { SVC_ADDR: topology.urls[0] };
  }, 60_000);

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

  beforeAll(async () => {
    topology = await startTopology(kind, kind === 'distributed' ? { services: ['transit', 'database'] } : {});
    const init = await svc(['operator', 'init', '-key-shares=1', '-key-threshold=1', '-format=json'], { SVC_ADDR: topology.urls[0] });
    const { unseal_keys_b64: keys, root_token: rootToken } = JSON.parse(init.stdout) as { unseal_keys_b64: string[]; root_token: string };
    await svc(['operator', 'unseal', keys[0]], { SVC_ADDR: topology.urls[0] });
    env = { SVC_ADDR: topology.urls[0], SVC_TOKEN: rootToken };
  }, 120_000);

  afterAll(() => topology?.stop());

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

  test('operator key-status and rotate, version, path-help, print token', async () => {
    const term = Number(/^Key Term\s+(\d+)$/m.exec(await run(['operator', 'key-status']))![1]);
    expect(await run(['operator', 'rotate'])).toMatch(new RegExp(`^Success! Rotated key\n\n[^]*Key Term\\s+${term + 1}\n`));
    expect(await run(['version'])).toMatch(/^Secrets Service v\d+\.\d+\.\d+\n$/);
    expect(await run(['path-help', 'sys/mounts'])).toContain('mount');
    expect(await run(['print', 'token'])).toBe(`${env.SVC_TOKEN}\n`);
  });
});

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
    const refused = await svc(['server', '-dev', '-service=replication'], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error: unknown service "replication"; expected one of gateway, auth-cloud, cloud, database, snapshot, sync, transit\n');
    expect(refused.stderr).toContain('-service=NAME                 Run one app of the distributed topology: gateway, auth-cloud, cloud, database, snapshot, sync, transit\n');
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
