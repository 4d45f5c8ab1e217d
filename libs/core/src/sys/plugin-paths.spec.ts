import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineRegistry, GATEWAY, type EngineType } from '@svc/engine-host';
import { Backend } from '@svc/framework';
import { engineRequest, MountedBackend, mountStorage, refusal, temporaryDirectoryPerTest, testMount, unsealedBarrier } from '@svc/testing';
import pino from 'pino';
import { Namespace, ROOT_NAMESPACE } from '../namespaces/namespace';
import { BUILTIN_VERSION, Plugins } from '../plugins/plugins';
import { pluginPaths } from './plugin-paths';

const SHA = 'ab'.repeat(32);
const DATABASE_PLUGIN = { name: 'postgresql-database-plugin', version: 'v1.4.0' };
/** A registration run from an OCI image: nothing on disk to check. */
const IMAGE = { sha256: SHA, oci_image: 'registry.example/mine', version: '1.0.0' };
const NO_TTLS = { default_lease_ttl: 0, max_lease_ttl: 0 };

function engineType(type: string, table: 'secret' | 'auth'): EngineType {
  return { type, table, runsIn: GATEWAY, factory: () => new Backend({ type, help: '', paths: [] }) };
}

describe('sys/plugins', () => {
  const pluginDirectory = temporaryDirectoryPerTest('plugin-paths-');
  let namespace: Namespace;
  let plugins: Plugins;
  /** The reloads asked of the core: mount uuids, and whether every gateway reloads. */
  let reloads: { uuids: readonly string[]; global: boolean }[];
  let sys: MountedBackend;

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    namespace = new Namespace(ROOT_NAMESPACE, barrier);
    await namespace.ensureBuiltins();
    // The real catalogs and checks, over in-memory storage and a plugin directory of the test's own.
    const engines = new EngineRegistry([engineType('kv', 'secret'), engineType('userpass', 'auth')]);
    plugins = new Plugins(barrier, engines, [DATABASE_PLUGIN], pluginDirectory(), pino({ level: 'silent' }), 1000);
    reloads = [];
    const paths = pluginPaths({
      plugins,
      mountData: { reloadBackends: async (uuids: readonly string[], global: boolean) => void reloads.push({ uuids, global }) },
      router: { namespaceOf: () => namespace },
    });
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/plugins', paths }), mount, mountStorage(mount));
  });

  describe('catalog', () => {
    it('lists the built-in plugins, and those registered, by type and in detail', async () => {
      await sys.write('plugins/catalog/secret/mine', IMAGE);
      expect(await sys.read('plugins/catalog')).toEqual({
        auth: ['userpass'],
        database: [DATABASE_PLUGIN.name],
        secret: ['kv', 'mine'],
        detailed: [
          { name: 'userpass', type: 'auth', version: BUILTIN_VERSION, builtin: true, deprecation_status: 'supported' },
          { ...DATABASE_PLUGIN, type: 'database', builtin: true, deprecation_status: 'supported' },
          { name: 'kv', type: 'secret', version: BUILTIN_VERSION, builtin: true, deprecation_status: 'supported' },
          { name: 'mine', type: 'secret', version: 'v1.0.0', builtin: false, sha256: SHA, oci_image: 'registry.example/mine' },
        ],
      });
      expect(await sys.list('plugins/catalog/secret/')).toEqual(['kv', 'mine']);
      expect(await sys.list('plugins/catalog/auth/')).toEqual(['userpass']);
    });

    it('registers, reads and removes one version of a plugin', async () => {
      expect(await sys.request('update', 'plugins/catalog/secret/mine', { ...IMAGE, args: 'serve,--quiet', env: 'A=1' })).toBeUndefined();
      // The environment may hold secrets: it is never shown.
      const shown = { name: 'mine', type: 'secret', version: 'v1.0.0', builtin: false, sha256: SHA, oci_image: 'registry.example/mine', command: '', args: ['serve', '--quiet'], runtime: '' };
      expect((await sys.request('read', 'plugins/catalog/secret/mine', { version: 'v1.0.0' }))?.data).toEqual(shown);
      // Without a version, the unversioned registration, which there is none of.
      expect(await sys.read('plugins/catalog/secret/mine')).toBeUndefined();

      expect(await sys.request('delete', 'plugins/catalog/secret/mine', { version: '1.0.0' })).toBeUndefined();
      expect(await sys.request('read', 'plugins/catalog/secret/mine', { version: 'v1.0.0' })).toBeUndefined();
      expect(await sys.list('plugins/catalog/secret/')).toEqual(['kv']);
    });

    it('checks a command against its sha256 in the plugin directory', async () => {
      const script = '#!/bin/sh\nexit 0\n';
      writeFileSync(join(pluginDirectory(), 'plug.sh'), script, { mode: 0o755 });
      const sha256 = createHash('sha256').update(script).digest('hex');
      await sys.write('plugins/catalog/secret/plug', { sha256: sha256.toUpperCase(), command: 'plug.sh' });
      expect(await sys.read('plugins/catalog/secret/plug')).toMatchObject({ name: 'plug', version: '', sha256, command: 'plug.sh' });

      const changed = await refusal(sys.write('plugins/catalog/secret/plug', { sha256: SHA, command: 'plug.sh' }));
      expect(changed.status).toBe(400);
      expect(changed.message).toMatch(/^plugin "plug": the sha256 of .*plug\.sh does not match the catalog/);
      expect(await refusal(sys.write('plugins/catalog/secret/other', { sha256, command: '../plug.sh' }))).toEqual({
        status: 400,
        message: 'command "../plug.sh" must be a path relative to the plugin directory, without ".."',
      });
      expect((await sys.read('plugins/catalog/secret/plug'))?.sha256).toBe(sha256);
    });

    it('reads a built-in plugin, and refuses to remove it', async () => {
      expect(await sys.read('plugins/catalog/secret/kv')).toEqual({
        name: 'kv',
        type: 'secret',
        version: BUILTIN_VERSION,
        builtin: true,
        command: '',
        args: [],
        sha256: '',
        deprecation_status: 'supported',
      });
      expect(await refusal(sys.request('delete', 'plugins/catalog/secret/kv', { version: BUILTIN_VERSION }))).toEqual({
        status: 400,
        message: 'cannot delete the built-in plugin "kv"',
      });
      expect(await sys.list('plugins/catalog/secret/')).toEqual(['kv']);
    });

    it('refuses registrations that are malformed, field by field', async () => {
      const refused = (name: string, body: Record<string, unknown>, type = 'secret') => refusal(sys.write(`plugins/catalog/${type}/${name}`, body));
      expect(await refused('mine', { ...IMAGE, sha256: 'abc' })).toEqual({ status: 400, message: 'field "sha256": must be the 64 hexadecimal digits of a SHA-256' });
      expect(await refused('mine', { ...IMAGE, env: 'NOVALUE' })).toEqual({ status: 400, message: 'field "env": every entry must be KEY=value' });
      expect(await refused('mine', { sha256: SHA })).toEqual({ status: 400, message: 'one of "command" or "oci_image" must be set' });
      expect(await refused('-mine', IMAGE)).toEqual({ status: 400, message: 'invalid plugin name "-mine": letters, digits, "_", "." and "-" only' });
      expect(await refused('mine', IMAGE, 'widget')).toEqual({ status: 400, message: 'unknown plugin type "widget"; known types: auth, database, secret' });
      expect(await refused('mine', { ...IMAGE, version: 'one' })).toEqual({ status: 400, message: 'version "one" is not a valid semantic version' });
      expect(await refused('mine', { ...IMAGE, version: '1.0.0+builtin' })).toEqual({ status: 400, message: 'version "1.0.0+builtin": only built-in plugins carry "+builtin" versions' });
      expect(await refused('mine', { ...IMAGE, runtime: 'gvisor' })).toEqual({
        status: 400,
        message: 'runtime "gvisor" is not in the plugin runtime catalog (sys/plugins/runtimes/catalog/container/gvisor)',
      });
      expect(await refusal(sys.list('plugins/catalog/widget/'))).toEqual({ status: 400, message: 'unknown plugin type "widget"; known types: auth, database, secret' });
      expect(await sys.list('plugins/catalog/secret/')).toEqual(['kv']);
    });
  });

  describe('runtimes', () => {
    const GVISOR = { name: 'gvisor', type: 'container', oci_runtime: 'runsc', cgroup_parent: 'plugins', cpu_nanos: 500_000_000, memory_bytes: 1 << 26 };

    it('registers, reads, lists and removes a runtime', async () => {
      expect(await sys.request('update', 'plugins/runtimes/catalog/container/gvisor', { cgroup_parent: 'plugins', cpu_nanos: GVISOR.cpu_nanos, memory_bytes: GVISOR.memory_bytes })).toBeUndefined();
      expect(await sys.read('plugins/runtimes/catalog/container/gvisor')).toEqual(GVISOR);
      expect(await sys.read('plugins/runtimes/catalog')).toEqual({ runtimes: [GVISOR] });
      expect((await sys.request('list', 'plugins/runtimes/catalog/', { type: 'container' }))?.data).toEqual({ runtimes: [GVISOR] });

      expect(await sys.request('delete', 'plugins/runtimes/catalog/container/gvisor')).toBeUndefined();
      expect(await sys.read('plugins/runtimes/catalog/container/gvisor')).toBeUndefined();
      expect(await sys.read('plugins/runtimes/catalog')).toEqual({ runtimes: [] });
    });

    it('refuses to remove a runtime that a registered plugin uses, or one that does not exist', async () => {
      await sys.write('plugins/runtimes/catalog/container/gvisor');
      await sys.write('plugins/catalog/secret/mine', { ...IMAGE, runtime: 'gvisor' });
      expect(await refusal(sys.request('delete', 'plugins/runtimes/catalog/container/gvisor'))).toEqual({
        status: 400,
        message: 'unable to delete plugin runtime "gvisor": registered plugins reference it (secret/mine v1.0.0)',
      });
      await sys.request('delete', 'plugins/catalog/secret/mine', { version: '1.0.0' });
      await sys.request('delete', 'plugins/runtimes/catalog/container/gvisor');
      expect(await refusal(sys.request('delete', 'plugins/runtimes/catalog/container/gvisor'))).toEqual({
        status: 400,
        message: 'plugin runtime "gvisor" (container) does not exist',
      });
    });

    it('refuses unknown runtime types, invalid names and negative limits', async () => {
      const unknownType = { status: 400, message: 'unknown plugin runtime type "vm"; known types: container' };
      expect(await refusal(sys.write('plugins/runtimes/catalog/vm/gvisor'))).toEqual(unknownType);
      expect(await refusal(sys.read('plugins/runtimes/catalog/vm/gvisor'))).toEqual(unknownType);
      expect(await refusal(sys.request('list', 'plugins/runtimes/catalog/', { type: 'vm' }))).toEqual(unknownType);
      expect(await refusal(sys.write('plugins/runtimes/catalog/container/g%20v'))).toEqual({ status: 400, message: 'invalid runtime name "g%20v": letters, digits, "_", "." and "-" only' });
      expect(await refusal(sys.write('plugins/runtimes/catalog/container/gvisor', { memory_bytes: -1 }))).toEqual({ status: 400, message: 'field "memory_bytes": must not be negative' });
      expect(await sys.read('plugins/runtimes/catalog')).toEqual({ runtimes: [] });
    });
  });

  describe('reload/backend', () => {
    let uuids: { kv: string; mine: string; userpass: string };

    beforeEach(async () => {
      const kv = await namespace.secretMounts.mount({ path: 'secret', type: 'kv' }, NO_TTLS);
      const mine = await namespace.secretMounts.mount({ path: 'mine', type: 'mine', external: true }, NO_TTLS);
      const userpass = await namespace.authMounts.mount({ path: 'userpass', type: 'userpass' }, NO_TTLS);
      uuids = { kv: kv.uuid, mine: mine.uuid, userpass: userpass.uuid };
    });

    it('reloads the mounts of a plugin here, answering with the request id', async () => {
      const request = engineRequest(sys.mount, 'update', 'plugins/reload/backend', { plugin: 'mine' });
      expect(await sys.backend.handle(request)).toEqual({ data: { reload_id: request.requestId }, status: 200 });
      expect(reloads).toEqual([{ uuids: [uuids.mine], global: false }]);
    });

    it('reloads the mounts named, on every gateway with scope "global" (202)', async () => {
      const answer = await sys.request('update', 'plugins/reload/backend', { mounts: ['/secret', 'auth/userpass/'], scope: 'global' });
      expect(answer?.status).toBe(202);
      expect(reloads).toEqual([{ uuids: [uuids.kv, uuids.userpass], global: true }]);
    });

    it('refuses a reload naming both or neither, or what is not there', async () => {
      const exactlyOne = { status: 400, message: 'exactly one of "plugin" or "mounts" must be given' };
      expect(await refusal(sys.write('plugins/reload/backend', {}))).toEqual(exactlyOne);
      expect(await refusal(sys.write('plugins/reload/backend', { plugin: 'mine', mounts: ['secret/'] }))).toEqual(exactlyOne);
      expect(await refusal(sys.write('plugins/reload/backend', { plugin: 'other' }))).toEqual({ status: 400, message: 'no mount runs plugin "other"' });
      expect(await refusal(sys.write('plugins/reload/backend', { mounts: ['secret', 'nope'] }))).toEqual({ status: 400, message: 'no mount at "nope"' });
      expect(await refusal(sys.write('plugins/reload/backend', { plugin: 'mine', scope: 'cluster' }))).toEqual({ status: 400, message: 'field "scope": "cluster" is not one of: , global' });
      expect(reloads).toEqual([]);
    });
  });
});
