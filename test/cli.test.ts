/**
 * The `svc` binary against a real server: status, operator init/unseal/seal, and the secret
 * commands, configured through SVC_ADDR, SVC_TOKEN and SVC_NAMESPACE as a user would.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SVC_BIN, eventually, runCli, startServerProcess, startTopology, type CliRun, type ServerProcess, type Topology } from '@svc/testing';

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
    expect(login.stdout).toMatch(/token_policies\s+\["reader","default"\]/);
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

describe('svc server -service', () => {
  test('names exactly the services that exist, in its usage and when refusing another', async () => {
    const refused = await svc(['server', '-dev', '-service=replication'], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error: unknown service "replication"; expected one of gateway, cloud, database, transit, snapshot\n');
    expect(refused.stderr).toContain('-service=NAME                 Run one app of the distributed topology: gateway, cloud, database, transit, snapshot\n');
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
