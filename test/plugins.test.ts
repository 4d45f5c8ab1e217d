/**
 * Issue 17 end to end: the plugin runtime catalog, the plugin catalog, and external plugins (the
 * example notes plugin, examples/plugin-notes) registered, mounted, used, crashed, reloaded and
 * unmounted, in both topologies. The distributed topology has two gateway replicas; each runs its
 * own process of a mount's plugin.
 */
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { api, assertingCalls, eventually, initAndUnseal, processAlive, runCli, startTopology, type Topology, type TopologyKind } from '@svc/testing';

const ROOT = path.resolve(__dirname, '..');
const PLUGIN_MAIN = path.join(ROOT, 'dist', 'examples', 'plugin-notes', 'src', 'main.js');
/** A marker in every note, so storage and logs can be searched for it. */
const SECRET = `note-${randomBytes(6).toString('hex')}`;

/** Writes an executable into the plugin directory that runs the built example plugin; returns its sha256. */
function installPlugin(dir: string, file: string): string {
  const target = path.join(dir, file);
  writeFileSync(target, `#!/bin/sh\nexec "${process.execPath}" "${PLUGIN_MAIN}" "$@"\n`);
  chmodSync(target, 0o755);
  return createHash('sha256').update(readFileSync(target)).digest('hex');
}

/**
 * Reads the physical storage a server's configuration names, below the barrier: the listing of
 * `prefix` and the raw value of `key` (base64). In its own process, with the built libs, as the
 * embedded store's WebAssembly needs what Jest's module loader lacks.
 */
async function readPhysical(configFile: string, prefix: string, key: string): Promise<{ keys: string[]; value: string }> {
  const script = `
    const { loadConfigFile } = require(${JSON.stringify(path.join(ROOT, 'dist/node_modules/@svc/config'))});
    const { createPhysical } = require(${JSON.stringify(path.join(ROOT, 'dist/node_modules/@svc/storage'))});
    (async () => {
      const physical = createPhysical((await loadConfigFile(process.argv[1], [])).storage);
      await physical.open();
      const keys = await physical.list(process.argv[2]);
      const value = ((await physical.get(process.argv[3])) ?? Buffer.alloc(0)).toString('base64');
      await physical.close();
      process.stdout.write(JSON.stringify({ keys, value }));
    })();`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, configFile, prefix, key]);
  return JSON.parse(stdout) as { keys: string[]; value: string };
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('plugins, %s', (kind) => {
  let topology: Topology;
  let urls: string[];
  let root: string;
  let pluginDir: string;
  let sha256: string;

  const call = (method: string, where: string, body?: unknown, token?: string, at = urls[0]) => api(at, method, `/v1/${where}`, { token: token ?? root, body });
  const { ok, refused } = assertingCalls(call);

  beforeAll(async () => {
    pluginDir = mkdtempSync(path.join(tmpdir(), 'svc-plugins-'));
    sha256 = installPlugin(pluginDir, 'notes');
    installPlugin(pluginDir, 'notes-cli');
    topology = await startTopology(kind, { gateways: 2, gatewayConfig: `plugin_directory = "${pluginDir}"` });
    urls = topology.urls;
    ({ rootToken: root } = await initAndUnseal(urls[0]));
    await eventually(async () => (await Promise.all(urls.map((url) => api(url, 'GET', '/v1/sys/seal-status')))).every((res) => (res.body as { sealed?: boolean }).sealed === false));
  }, 180_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(pluginDir, { recursive: true, force: true });
  });

  describe('plugin runtime catalog', () => {
    test('registers, updates, reads, lists (with the type filter) and deletes runtimes', async () => {
      expect((await ok('GET', 'sys/plugins/runtimes/catalog')).data).toEqual({ runtimes: [] });
      await ok('POST', 'sys/plugins/runtimes/catalog/container/gvisor', {});
      expect((await ok('GET', 'sys/plugins/runtimes/catalog/container/gvisor')).data).toEqual({
        name: 'gvisor',
        type: 'container',
        oci_runtime: 'runsc',
        cgroup_parent: '',
        cpu_nanos: 0,
        memory_bytes: 0,
      });
      await ok('POST', 'sys/plugins/runtimes/catalog/container/gvisor', { oci_runtime: 'runc', cgroup_parent: '/svc', cpu_nanos: 500_000_000, memory_bytes: '1048576' });
      const updated = { name: 'gvisor', type: 'container', oci_runtime: 'runc', cgroup_parent: '/svc', cpu_nanos: 500_000_000, memory_bytes: 1_048_576 };
      expect((await ok('GET', 'sys/plugins/runtimes/catalog/container/gvisor')).data).toEqual(updated);
      expect((await ok('GET', 'sys/plugins/runtimes/catalog?type=container')).data).toEqual({ runtimes: [updated] });
      expect((await ok('LIST', 'sys/plugins/runtimes/catalog')).data).toEqual({ runtimes: [updated] });
      await ok('DELETE', 'sys/plugins/runtimes/catalog/container/gvisor');
      expect((await call('GET', 'sys/plugins/runtimes/catalog/container/gvisor')).status).toBe(404);
    });

    test('refuses bad input, unknown runtimes and deleting a runtime a plugin references', async () => {
      await refused('GET', 'sys/plugins/runtimes/catalog?type=vm', undefined, 400, /unknown plugin runtime type "vm"/);
      await refused('POST', 'sys/plugins/runtimes/catalog/vm/x', {}, 400, /unknown plugin runtime type "vm"/);
      await refused('POST', 'sys/plugins/runtimes/catalog/container/x', { memory_bytes: -1 }, 400, /memory_bytes/);
      await refused('POST', 'sys/plugins/runtimes/catalog/container/x', { cpu_nanos: 'lots' }, 400, /cpu_nanos/);
      await refused('DELETE', 'sys/plugins/runtimes/catalog/container/missing', undefined, 400, /does not exist/);
      const image = { sha256: 'a'.repeat(64), command: 'notes', oci_image: 'registry.example/notes' };
      await refused('POST', 'sys/plugins/catalog/secret/boxed', { ...image, runtime: 'missing' }, 400, /runtime "missing" is not in the plugin runtime catalog/);
      await refused('POST', 'sys/plugins/catalog/secret/boxed', { sha256: sha256, command: 'notes', runtime: 'boxes' }, 400, /runtime can only be set together with oci_image/);

      await ok('POST', 'sys/plugins/runtimes/catalog/container/boxes', { oci_runtime: 'runsc' });
      await ok('POST', 'sys/plugins/catalog/secret/boxed', { ...image, runtime: 'boxes', version: 'v1.0.0' });
      await refused('DELETE', 'sys/plugins/runtimes/catalog/container/boxes', undefined, 400, /registered plugins reference it \(secret\/boxed v1\.0\.0\)/);
      // The catalog keeps the container registration exactly; running one needs a container runtime this server does not have.
      expect((await ok('GET', 'sys/plugins/catalog/secret/boxed?version=v1.0.0')).data).toMatchObject({ oci_image: 'registry.example/notes', runtime: 'boxes', builtin: false });
      await refused('POST', 'sys/mounts/boxed', { type: 'boxed', plugin_version: 'v1.0.0' }, 400, /unable to run containerized plugin "boxed"/);
      await ok('DELETE', 'sys/plugins/catalog/secret/boxed?version=v1.0.0');
      await ok('DELETE', 'sys/plugins/runtimes/catalog/container/boxes');
    });

    test('needs sudo', async () => {
      await ok('PUT', 'sys/policies/acl/no-sudo', { policy: 'path "sys/plugins/*" {\n  capabilities = ["create", "read", "update", "delete", "list"]\n}' });
      const token = (await ok('POST', 'auth/token/create', { policies: ['no-sudo'] })).auth.client_token as string;
      expect((await call('POST', 'sys/plugins/runtimes/catalog/container/x', {}, token)).status).toBe(403);
      expect((await call('GET', 'sys/plugins/runtimes/catalog', undefined, token)).status).toBe(403);
      expect((await call('POST', 'sys/plugins/catalog/secret/x', { sha256, command: 'notes' }, token)).status).toBe(403);
    });
  });

  describe('plugin catalog', () => {
    test('refuses a wrong sha256 and other bad registrations with 400', async () => {
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256: 'b'.repeat(64), command: 'notes' }, 400, /sha256 of .* does not match the catalog/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256: 'xyz', command: 'notes' }, 400, /"sha256": must be the 64 hexadecimal digits/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { command: 'notes' }, 400, /missing required field "sha256"/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: '../notes' }, 400, /relative to the plugin directory, without "\.\."/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'absent' }, 400, /command "absent" does not exist in the plugin directory/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256 }, 400, /one of "command" or "oci_image" must be set/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', version: 'one' }, 400, /version "one" is not a valid semantic version/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', version: '1.0.0+builtin.svc' }, 400, /only built-in plugins/);
      await refused('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', env: ['NOEQUALS'] }, 400, /"env": every entry must be KEY=value/);
      await refused('POST', 'sys/plugins/catalog/widget/notes', { sha256, command: 'notes' }, 400, /unknown plugin type "widget"/);
      expect((await call('GET', 'sys/plugins/catalog/secret/notes')).status).toBe(404);
    });

    test('lists built-in plugins with their versions beside registered ones, and reads both', async () => {
      await ok('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', env: ['NOTES_GREETING=unversioned'] });
      const catalog = (await ok('GET', 'sys/plugins/catalog')).data;
      // `aws` is Vault's name of the cloud engine and auth method, listed as the built-in it is.
      expect(catalog.secret).toEqual(['aws', 'cloud', 'database', 'kv', 'notes', 'transit']);
      expect(catalog.auth).toEqual(['approle', 'aws', 'cloud', 'jwt', 'kubernetes', 'oidc', 'userpass']);
      expect(catalog.detailed).toContainEqual({ name: 'aws', type: 'auth', version: 'v0.1.0+builtin.svc', builtin: true, deprecation_status: 'supported' });
      expect(catalog.database).toEqual(['mysql-database-plugin', 'postgresql-database-plugin', 'redis-database-plugin']);
      expect(catalog.detailed).toContainEqual({ name: 'kv', type: 'secret', version: 'v0.1.0+builtin.svc', builtin: true, deprecation_status: 'supported' });
      expect(catalog.detailed).toContainEqual({ name: 'notes', type: 'secret', version: '', builtin: false, sha256 });
      expect((await ok('LIST', 'sys/plugins/catalog/secret')).data.keys).toEqual(['aws', 'cloud', 'database', 'kv', 'notes', 'transit']);
      const read = (await ok('GET', 'sys/plugins/catalog/secret/notes')).data;
      expect(read).toEqual({ name: 'notes', type: 'secret', version: '', builtin: false, sha256, command: 'notes', args: [], oci_image: '', runtime: '' });
      expect(JSON.stringify(read)).not.toContain('unversioned'); // env may hold secrets: never shown
      expect((await ok('GET', 'sys/plugins/catalog/secret/kv')).data).toMatchObject({ name: 'kv', builtin: true, version: 'v0.1.0+builtin.svc' });
      await refused('DELETE', 'sys/plugins/catalog/secret/kv?version=v0.1.0%2Bbuiltin.svc', undefined, 400, /cannot delete the built-in plugin "kv"/);
    });
  });

  // Each command is a process of its own: slow on a loaded machine, hence the longer limit.
  test('svc plugin register, list, info, reload and deregister', async () => {
    const cli = (...args: string[]) => runCli(args, { SVC_ADDR: urls[0], SVC_TOKEN: root });
    const registered = await cli('plugin', 'register', '-sha256', sha256, '-version=v0.9.0', '-args=--label=cli,--verbose', 'secret', 'notes-cli');
    expect([registered.code, registered.stdout]).toEqual([0, 'Success! Registered plugin: notes-cli\n']);
    expect((await ok('GET', 'sys/plugins/catalog/secret/notes-cli?version=v0.9.0')).data).toMatchObject({ command: 'notes-cli', args: ['--label=cli', '--verbose'] });
    const bad = await cli('plugin', 'register', '-sha256', 'c'.repeat(64), '-command=notes', 'secret', 'notes-bad');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/sha256 of .* does not match the catalog/)]);
    const listed = await cli('plugin', 'list', 'secret');
    expect(listed.stdout.split('\n').slice(0, 4)).toEqual(['Name         Version', '----         -------', 'aws          v0.1.0+builtin.svc', 'cloud        v0.1.0+builtin.svc']);
    expect(listed.stdout).toMatch(/^notes-cli {4,}v0\.9\.0$/m);
    const info = await cli('plugin', 'info', '-version=v0.9.0', '-format=json', 'secret', 'notes-cli');
    expect(JSON.parse(info.stdout)).toMatchObject({ name: 'notes-cli', version: 'v0.9.0', builtin: false, sha256 });
    const reload = await cli('plugin', 'reload', '-mounts=secret/');
    expect([reload.code, reload.stdout]).toEqual([0, 'Success! Reloaded mounts: secret/\n']);
    const removed = await cli('plugin', 'deregister', '-version=v0.9.0', 'secret', 'notes-cli');
    expect([removed.code, removed.stdout]).toEqual([0, 'Success! Deregistered plugin (if it was registered): notes-cli\n']);
    expect((await call('GET', 'sys/plugins/catalog/secret/notes-cli?version=v0.9.0')).status).toBe(404);

    const runtime = await cli('plugin', 'runtime', 'register', '-type=container', '-oci_runtime=runc', '-cpu_nanos=250000000', 'cli-runtime');
    expect([runtime.code, runtime.stdout]).toEqual([0, 'Success! Registered plugin runtime: cli-runtime\n']);
    expect((await cli('plugin', 'runtime', 'list')).stdout).toMatch(/^cli-runtime\s+container\s+runc\s+n\/a\s+250000000\s+0$/m);
    expect(JSON.parse((await cli('plugin', 'runtime', 'info', '-format=json', 'cli-runtime')).stdout)).toEqual({
      name: 'cli-runtime',
      type: 'container',
      oci_runtime: 'runc',
      cgroup_parent: '',
      cpu_nanos: 250_000_000,
      memory_bytes: 0,
    });
    expect((await cli('plugin', 'runtime', 'deregister', 'cli-runtime')).stdout).toBe('Success! Deregistered plugin runtime: cli-runtime\n');
    expect((await call('GET', 'sys/plugins/runtimes/catalog/container/cli-runtime')).status).toBe(404);
  }, 300_000);

  describe('external plugins', () => {
    const notesAt = (mount: string, name: string, at = urls[0]) => api(at, 'GET', `/v1/${mount}/notes/${name}`, { token: root });
    const info = async (mount: string) => (await ok('GET', `${mount}/info`, undefined, undefined)).data as { pid: number; label: string; greeting: string } & Record<string, unknown>;
    let mountUuid: string;

    test('a mounted plugin serves its paths through every gateway, its data kept by the host', async () => {
      await ok('POST', 'sys/mounts/notes', { type: 'notes', description: 'notes plugin' });
      const mount = (await ok('GET', 'sys/mounts/notes')).data;
      expect(mount).toMatchObject({ type: 'notes', plugin_version: '', running_plugin_version: '', description: 'notes plugin' });
      mountUuid = mount.uuid as string;
      expect((await ok('POST', 'notes/notes/first', { value: SECRET })).data).toEqual({ version: 1 });
      for (const url of urls) {
        const read = await notesAt('notes', 'first', url);
        expect([read.status, read.body.data]).toEqual([200, { value: SECRET, version: 1 }]);
      }
      // Check-and-set runs in a host transaction.
      expect((await ok('POST', 'notes/notes/first', { value: `${SECRET}-2`, cas: 1 })).data).toEqual({ version: 2 });
      await refused('POST', 'notes/notes/first', { value: 'x', cas: 1 }, 400, /check-and-set mismatch: the note is at version 2/);
      await refused('POST', 'notes/notes/second', {}, 400, /missing required field "value"/);
      expect((await ok('LIST', 'notes/notes/')).data.keys).toEqual(['first']);
      expect((await ok('GET', 'notes/info')).data.greeting).toBe('unversioned');
      expect((await call('GET', 'notes/nothing-here')).status).toBe(404);
      // The plugin's log lines (its stderr) reach the gateway's log.
      await eventually(async () => topology.processes[0].logs.some((line) => line.includes('plugin stderr') && line.includes('note written')));
    });

    test('a crashed plugin answers 503, then is restarted', async () => {
      const before = await info('notes');
      process.kill(before.pid, 'SIGKILL');
      const down = await notesAt('notes', 'first');
      expect([down.status, down.body.errors.join()]).toEqual([503, expect.stringMatching(/plugin "notes" exited \(signal SIGKILL\)/)]);
      await eventually(async () => (await notesAt('notes', 'first')).status === 200, 60_000, 200);
      expect((await info('notes')).pid).not.toBe(before.pid);
      expect((await notesAt('notes', 'first')).body.data).toEqual({ value: `${SECRET}-2`, version: 2 });
    });

    test('versions: a mount runs the registration of the version it names', async () => {
      await ok('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', version: '1.0.0', args: ['--label=one'] });
      await ok('POST', 'sys/plugins/catalog/secret/notes', { sha256, command: 'notes', version: 'v2.0.0', args: ['--label=two'], env: ['NOTES_GREETING=hello'] });
      const detailed = ((await ok('GET', 'sys/plugins/catalog')).data.detailed as { name: string; version: string }[]).filter((entry) => entry.name === 'notes');
      expect(detailed.map((entry) => entry.version)).toEqual(['', 'v1.0.0', 'v2.0.0']);
      expect((await ok('GET', 'sys/plugins/catalog/secret/notes?version=v1.0.0')).data).toMatchObject({ version: 'v1.0.0', args: ['--label=one'] });

      await ok('POST', 'sys/mounts/notes-one', { type: 'notes', plugin_version: '1.0.0' });
      await ok('POST', 'sys/mounts/notes-two', { type: 'plugin', plugin_name: 'notes', plugin_version: 'v2.0.0' });
      expect((await ok('GET', 'sys/mounts/notes-one')).data).toMatchObject({ plugin_version: 'v1.0.0', running_plugin_version: 'v1.0.0' });
      expect(await info('notes-one')).toMatchObject({ label: 'one', greeting: '' });
      expect(await info('notes-two')).toMatchObject({ label: 'two', greeting: 'hello' });
      await refused('POST', 'sys/mounts/notes-three', { type: 'notes', plugin_version: 'v3.0.0' }, 400, /plugin "notes" version v3\.0\.0 is not in the secret plugin catalog/);
      await refused('POST', 'sys/mounts/notes-bad', { type: 'plugin' }, 400, /plugin_name must be given/);
      await refused('POST', 'sys/mounts/kv-old', { type: 'kv', plugin_version: 'v9.9.9+builtin.svc' }, 400, /only built-in plugins/);
      // A built-in runs when its own version is named.
      await ok('POST', 'sys/mounts/kv-builtin', { type: 'kv', plugin_version: 'v0.1.0+builtin.svc' });
      expect((await ok('GET', 'sys/mounts/kv-builtin')).data).toMatchObject({ type: 'kv', running_plugin_version: 'v0.1.0+builtin.svc' });
      await refused('POST', 'sys/auth/notes', { type: 'notes' }, 400, /unknown auth method type "notes"/);
    });

    test('reload restarts a plugin on every gateway (global) or on this one', async () => {
      const before = await Promise.all(urls.map(async (url) => (await api(url, 'GET', '/v1/notes-one/info', { token: root })).body.data.pid as number));
      const reload = await call('POST', 'sys/plugins/reload/backend', { plugin: 'notes', scope: 'global' });
      expect([reload.status, typeof reload.body.data.reload_id]).toEqual([202, 'string']);
      const after = await Promise.all(urls.map(async (url) => (await api(url, 'GET', '/v1/notes-one/info', { token: root })).body.data.pid as number));
      after.forEach((pid, i) => expect(pid).not.toBe(before[i]));
      for (const pid of before) await eventually(async () => !processAlive(pid));

      expect((await ok('POST', 'sys/plugins/reload/backend', { mounts: ['notes-two/'] })).data.reload_id).toEqual(expect.any(String));
      await refused('POST', 'sys/plugins/reload/backend', { plugin: 'notes', mounts: ['notes/'] }, 400, /exactly one of "plugin" or "mounts"/);
      await refused('POST', 'sys/plugins/reload/backend', {}, 400, /exactly one of "plugin" or "mounts"/);
      await refused('POST', 'sys/plugins/reload/backend', { plugin: 'notes', scope: 'cluster' }, 400, /scope/);
      await refused('POST', 'sys/plugins/reload/backend', { mounts: ['nowhere/'] }, 400, /no mount at "nowhere\/"/);
    });

    test('a binary changed after registration: mounting it fails, and a running mount fails to start again', async () => {
      const changedSha = installPlugin(pluginDir, 'notes-changing');
      await ok('POST', 'sys/plugins/catalog/secret/changing', { sha256: changedSha, command: 'notes-changing' });
      await ok('POST', 'sys/mounts/changing', { type: 'changing' });
      expect((await ok('POST', 'changing/notes/a', { value: 'v' })).data).toEqual({ version: 1 });
      appendFileSync(path.join(pluginDir, 'notes-changing'), '# changed\n');
      await refused('POST', 'sys/mounts/changing-again', { type: 'changing' }, 400, /sha256 of .*notes-changing does not match the catalog/);
      await ok('POST', 'sys/plugins/reload/backend', { mounts: ['changing'] });
      await refused('GET', 'changing/notes/a', undefined, 503, /sha256 of .*notes-changing does not match the catalog/);
    });

    test('unmounting stops the plugin process on every gateway', async () => {
      const pids = await Promise.all(urls.map(async (url) => (await api(url, 'GET', '/v1/notes-two/info', { token: root })).body.data.pid as number));
      await ok('DELETE', 'sys/mounts/notes-two');
      for (const pid of pids) await eventually(async () => !processAlive(pid));
      expect((await call('GET', 'notes-two/info')).status).toBe(404);
    });

    test('what the plugin wrote is ciphertext in storage, and no log line holds it', async () => {
      const gateway = topology.processes[0];
      const pid = (await info('notes')).pid;
      const configFile = gateway.child.spawnargs.find((arg) => arg.startsWith('-config='))!.slice('-config='.length);
      // The embedded store is used by one process at a time: stop the all-in-one server first (its plugins stop with it).
      if (kind === 'all-in-one') {
        await topology.stopProcess(gateway.name);
        expect(processAlive(pid)).toBe(false);
      }
      const prefix = `logical/${mountUuid}/notes/`;
      const physical = await readPhysical(configFile, prefix, `${prefix}first`);
      expect(physical.keys).toEqual(['first']);
      const stored = Buffer.from(physical.value, 'base64').toString('latin1');
      expect(stored.length).toBeGreaterThan(0);
      expect(stored).not.toContain(SECRET);
      expect(stored).not.toContain('version');
      for (const process of topology.processes) expect(process.logs.join('\n')).not.toContain(SECRET);
    });
  });
});
