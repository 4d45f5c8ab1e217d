import { EngineRegistry, GATEWAY, mountStoragePrefix, type EngineType } from '@svc/engine-host';
import { Backend, type MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { type Barrier, createView } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import { MountData } from '../mounts/mount-data';
import { Namespace, ROOT_NAMESPACE } from '../namespaces/namespace';
import type { PluginType } from '../plugins/catalog';
import { BUILTIN_VERSION } from '../plugins/plugins';
import { mountPaths } from './mount-paths';

/** The system TTLs (config): an hour by default, a day at most. */
const SYSTEM_TTLS = { defaultLeaseTtl: 3600, maxLeaseTtl: 86400 };

/** An external plugin registered in the catalog (as a secrets engine and as an auth method). */
const EXTERNAL = 'ext';

function engineType(type: string, table: 'secret' | 'auth', builtin = false): EngineType {
  return { type, table, runsIn: GATEWAY, builtin, factory: () => new Backend({ type, help: '', paths: [] }) };
}

describe('sys/mounts, sys/auth and sys/remount', () => {
  let barrier: Barrier;
  let namespace: Namespace;
  /** What the core was asked to do beside the mount tables. */
  let revoked: string[];
  let dropped: string[];
  let checked: MountInfo[];
  let pluginStarts: boolean;
  let sys: MountedBackend;

  beforeEach(async () => {
    barrier = unsealedBarrier();
    namespace = new Namespace(ROOT_NAMESPACE, barrier);
    await namespace.ensureBuiltins();
    [revoked, dropped, checked, pluginStarts] = [[], [], [], true];
    const engines = new EngineRegistry([
      engineType('system', 'secret', true),
      engineType('cubbyhole', 'secret', true),
      engineType('token', 'auth', true),
      { ...engineType('kv', 'secret'), variants: { 'kv-v1': { version: '1' }, 'kv-v2': { version: '2' } } },
      engineType('transit', 'secret'),
      engineType('userpass', 'auth'),
      { ...engineType('cloud', 'secret'), runsIn: 'cloud', aliases: ['aws'] },
      { ...engineType('cloud', 'auth'), runsIn: 'auth-cloud', aliases: ['aws'] },
    ]);
    /** The built-in types a mount of that table may run (database plugins are no mount type). */
    const builtIn = (table: PluginType) => (table === 'database' ? [] : engines.mountable(table));
    const paths = mountPaths({
      config: SYSTEM_TTLS,
      engines,
      leaseLifecycle: { revokeUnder: async (where: Namespace, prefix: string) => void revoked.push(where.path + prefix) },
      // The real purge and move records, over the same barrier; the backends dropped are noted.
      mountData: new MountData(barrier, { dropBackends: async (uuids: readonly string[]) => void dropped.push(...uuids) }),
      plugins: {
        mountable: async (table: PluginType) => [...builtIn(table), EXTERNAL].sort(),
        forMount: async (table: PluginType, name: string, version: string) => {
          if (name === EXTERNAL) return { external: true, version };
          return builtIn(table).includes(name) ? { external: false, version: '' } : undefined;
        },
        host: {
          check: async (mount: MountInfo) => {
            checked.push(mount);
            if (!pluginStarts) throw ServiceError.badRequest(`plugin "${mount.type}" exited before its handshake`);
          },
        },
      },
      router: { namespaceOf: () => namespace },
    });
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/ mounts', paths }), mount, mountStorage(mount));
  });

  describe('secrets engines', () => {
    it('enables one, shows it alone and in the list', async () => {
      const body = { type: 'kv', description: 'app secrets', config: { default_lease_ttl: '1m', max_lease_ttl: 7200 }, options: { version: '2' }, local: true };
      expect(await sys.request('update', 'mounts/secret', body)).toBeUndefined();
      const entry = namespace.secretMounts.get('secret/')!;
      expect(await sys.read('mounts/secret')).toEqual({
        type: 'kv',
        description: 'app secrets',
        accessor: entry.accessor,
        uuid: entry.uuid,
        config: { default_lease_ttl: 60, max_lease_ttl: 7200, force_no_cache: false },
        options: { version: '2' },
        local: true,
        seal_wrap: false,
        external_entropy_access: false,
        plugin_version: '',
        running_plugin_version: BUILTIN_VERSION,
        deprecation_status: 'supported',
      });
      const listed = (await sys.read('mounts'))!;
      expect(Object.keys(listed)).toEqual(['cubbyhole/', 'identity/', 'secret/', 'sys/']);
      expect(listed['secret/']).toEqual(await sys.read('mounts/secret/'));
      expect(listed['cubbyhole/']).toMatchObject({ type: 'cubbyhole', options: null, config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false } });
    });

    it('reads the tuning, with the system TTLs for those unset, and tunes it', async () => {
      await sys.write('mounts/secret', { type: 'kv', options: { version: '1' } });
      expect(await sys.read('mounts/secret/tune')).toEqual({ default_lease_ttl: 3600, max_lease_ttl: 86400, force_no_cache: false, description: '', options: { version: '1' } });

      const tuned = { default_lease_ttl: '30m', max_lease_ttl: '2h', description: 'tuned', options: { version: '2' }, listing_visibility: 'unauth' };
      expect(await sys.request('update', 'mounts/secret/tune', tuned)).toBeUndefined();
      expect(await sys.read('mounts/secret/tune')).toEqual({
        default_lease_ttl: 1800,
        max_lease_ttl: 7200,
        force_no_cache: false,
        description: 'tuned',
        options: { version: '2' },
        listing_visibility: 'unauth',
      });
      expect((await sys.read('mounts/secret'))?.config).toEqual({ default_lease_ttl: 1800, max_lease_ttl: 7200, force_no_cache: false, listing_visibility: 'unauth' });

      // Only what is sent changes; an empty visibility is the default (hidden) again.
      await sys.write('mounts/secret/tune', { listing_visibility: '' });
      expect(await sys.read('mounts/secret/tune')).toEqual({ default_lease_ttl: 1800, max_lease_ttl: 7200, force_no_cache: false, description: 'tuned', options: { version: '2' } });
    });

    it('disables one: its leases are revoked, its backend dropped and its data deleted', async () => {
      await sys.write('mounts/secret', { type: 'kv' });
      const { uuid } = namespace.secretMounts.get('secret/')!;
      const data = createView(barrier, mountStoragePrefix({ uuid }));
      await data.put('config/x', Buffer.from('kept until disabled'));

      expect(await sys.request('delete', 'mounts/secret')).toBeUndefined();
      expect(revoked).toEqual(['secret/']);
      expect(dropped).toEqual([uuid]);
      expect(await data.list('')).toEqual([]);
      expect(Object.keys((await sys.read('mounts'))!)).not.toContain('secret/');

      // Disabling what is not mounted succeeds, as in Vault, and touches nothing.
      expect(await sys.request('delete', 'mounts/secret')).toBeUndefined();
      expect(revoked).toEqual(['secret/']);
    });

    it('refuses types that are unknown, built in or missing, and names the known ones', async () => {
      expect(await refusal(sys.write('mounts/x', { type: 'nope' }))).toEqual({ status: 400, message: 'unknown secrets engine type "nope"; known types: aws, cloud, ext, kv, transit' });
      expect(await refusal(sys.write('mounts/x', { type: 'cubbyhole' }))).toEqual({
        status: 400,
        message: 'secrets engine type "cubbyhole" is mounted in every namespace and cannot be enabled again',
      });
      expect(await refusal(sys.write('mounts/x', { type: 'userpass' }))).toEqual({ status: 400, message: 'unknown secrets engine type "userpass"; known types: aws, cloud, ext, kv, transit' });
      expect(await refusal(sys.write('mounts/x', {}))).toEqual({ status: 400, message: 'missing required field "type"' });
      expect(namespace.secretMounts.get('x/')).toBeUndefined();
    });

    it('refuses configurations that are invalid, and paths in use', async () => {
      expect(await refusal(sys.write('mounts/x', { type: 'kv', config: { default_lease_ttl: 'soon' } }))).toEqual({
        status: 400,
        message: 'field "config.default_lease_ttl": not a valid duration',
      });
      expect(await refusal(sys.write('mounts/x', { type: 'kv', config: { listing_visibility: 'public' } }))).toEqual({
        status: 400,
        message: 'field "config.listing_visibility": must be "unauth" or "hidden"',
      });
      expect(await refusal(sys.write('mounts/x', { type: 'kv', config: { default_lease_ttl: '2h', max_lease_ttl: '1h' } }))).toEqual({
        status: 400,
        message: 'default_lease_ttl cannot be greater than max_lease_ttl',
      });
      expect(await refusal(sys.write('mounts/x', { type: 'kv', config: { max_lease_ttl: '48h' } }))).toEqual({
        status: 400,
        message: 'max_lease_ttl cannot be greater than the system max lease TTL',
      });
      expect(await refusal(sys.write('mounts/sys/nested', { type: 'kv' }))).toEqual({ status: 400, message: 'path is already in use at sys/' });
      expect(namespace.secretMounts.get('x/')).toBeUndefined();
    });

    it('refuses to read, tune or badly tune what is not mounted', async () => {
      expect(await refusal(sys.read('mounts/nope'))).toEqual({ status: 400, message: 'no secrets engine mounted at "nope"' });
      expect(await refusal(sys.read('mounts/nope/tune'))).toEqual({ status: 400, message: 'no secrets engine mounted at "nope"' });
      expect(await refusal(sys.write('mounts/nope/tune', { description: 'x' }))).toEqual({ status: 400, message: 'no secrets engine mounted at "nope"' });
      await sys.write('mounts/secret', { type: 'kv' });
      expect(await refusal(sys.write('mounts/secret/tune', { listing_visibility: 'public' }))).toEqual({
        status: 400,
        message: 'field "listing_visibility": must be "unauth" or "hidden"',
      });
      expect(await refusal(sys.write('mounts/secret/tune', { max_lease_ttl: '48h' }))).toEqual({ status: 400, message: 'max_lease_ttl cannot be greater than the system max lease TTL' });
    });
  });

  describe('external plugins', () => {
    it('are started once before they are mounted, with the version asked for', async () => {
      await sys.write('mounts/plug', { type: 'plugin', plugin_name: EXTERNAL, plugin_version: 'v1.2.0', description: 'mine' });
      expect(checked).toEqual([expect.objectContaining({ path: 'plug', type: EXTERNAL, namespace: '', description: 'mine', external: true, plugin_version: 'v1.2.0' })]);
      expect(await sys.read('mounts/plug')).toMatchObject({ type: EXTERNAL, plugin_version: 'v1.2.0', running_plugin_version: 'v1.2.0' });
      expect(namespace.secretMounts.get('plug/')?.external).toBe(true);

      // Vault's older form names the plugin in `config`.
      await sys.write('mounts/other', { type: 'plugin', config: { plugin_name: EXTERNAL } });
      expect(await sys.read('mounts/other')).toMatchObject({ type: EXTERNAL, plugin_version: '' });
    });

    it('are refused when they cannot start, as auth methods, or without a name', async () => {
      pluginStarts = false;
      expect(await refusal(sys.write('mounts/plug', { type: EXTERNAL }))).toEqual({ status: 400, message: 'plugin "ext" exited before its handshake' });
      expect(namespace.secretMounts.get('plug/')).toBeUndefined();
      expect(await refusal(sys.write('auth/plug', { type: EXTERNAL }))).toEqual({
        status: 400,
        message: 'auth method "ext" is an external plugin: this server runs external plugins as secrets engines only',
      });
      expect(await refusal(sys.write('mounts/plug', { type: 'plugin' }))).toEqual({ status: 400, message: 'plugin_name must be given to mount a plugin of type "plugin"' });
      expect(checked).toHaveLength(1);
    });
  });

  describe("Vault's names", () => {
    it('enables kv of a version by "kv-v1" or "kv-v2", as a kv mount with that version', async () => {
      await sys.write('mounts/kv-v2', { type: 'kv-v2' });
      await sys.write('mounts/pinned', { type: 'kv-v2', options: { version: '1', other: 'kept' } });
      await sys.write('mounts/old', { type: 'kv-v1' });
      expect(await sys.read('mounts/kv-v2')).toMatchObject({ type: 'kv', options: { version: '2' } });
      expect(await sys.read('mounts/pinned')).toMatchObject({ type: 'kv', options: { version: '2', other: 'kept' } });
      expect(await sys.read('mounts/old')).toMatchObject({ type: 'kv', options: { version: '1' } });
      expect(await refusal(sys.write('auth/kv', { type: 'kv-v2' }))).toMatchObject({ status: 400, message: expect.stringMatching(/^unknown auth method type "kv-v2"; known types: /) });
    });

    it('enables the cloud engine and auth method as "aws", which the mount keeps as its type', async () => {
      await sys.write('mounts/aws', { type: 'aws' });
      await sys.write('auth/aws', { type: 'aws' });
      expect(await sys.read('mounts/aws')).toMatchObject({ type: 'aws' });
      expect(await sys.read('auth/aws')).toMatchObject({ type: 'aws' });
      expect(namespace.authMounts.get('aws/')).toMatchObject({ type: 'aws', table: 'auth' });
    });
  });

  describe('auth methods', () => {
    it('are enabled, listed, tuned and disabled under auth/', async () => {
      await sys.write('auth/userpass', { type: 'userpass', description: 'people' });
      expect(Object.keys((await sys.read('auth'))!)).toEqual(['token/', 'userpass/']);
      expect(await sys.read('auth/userpass')).toMatchObject({ type: 'userpass', description: 'people', running_plugin_version: BUILTIN_VERSION });
      await sys.write('auth/userpass/tune', { default_lease_ttl: '10m' });
      expect(await sys.read('auth/userpass/tune')).toMatchObject({ default_lease_ttl: 600, max_lease_ttl: 86400 });

      const { uuid } = namespace.authMounts.get('userpass/')!;
      await sys.request('delete', 'auth/userpass');
      expect(revoked).toEqual(['auth/userpass/']);
      expect(dropped).toEqual([uuid]);
      expect(Object.keys((await sys.read('auth'))!)).toEqual(['token/']);
    });

    it('refuses secrets engines, built-in methods, and what is not enabled', async () => {
      expect(await refusal(sys.write('auth/kv', { type: 'kv' }))).toEqual({ status: 400, message: 'unknown auth method type "kv"; known types: aws, cloud, ext, userpass' });
      expect(await refusal(sys.write('auth/other', { type: 'token' }))).toEqual({
        status: 400,
        message: 'auth method type "token" is mounted in every namespace and cannot be enabled again',
      });
      expect(await refusal(sys.read('auth/nope/tune'))).toEqual({ status: 400, message: 'no auth method mounted at "nope"' });
    });
  });

  describe('remount', () => {
    it('moves a mount with its uuid, and reports the move by its migration id', async () => {
      await sys.write('mounts/secret', { type: 'kv' });
      const { uuid } = namespace.secretMounts.get('secret/')!;
      const { migration_id: id } = await sys.write('remount', { from: 'secret', to: '/kv' });
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(namespace.secretMounts.get('secret/')).toBeUndefined();
      expect(await sys.read('mounts/kv')).toMatchObject({ type: 'kv', uuid });
      expect(await sys.read(`remount/status/${id}`)).toEqual({ migration_id: id, migration_info: { source_mount: 'secret', target_mount: 'kv', status: 'success' } });

      await sys.write('auth/userpass', { type: 'userpass' });
      await sys.write('remount', { from: 'auth/userpass', to: 'auth/people' });
      expect(Object.keys((await sys.read('auth'))!)).toEqual(['people/', 'token/']);
    });

    it('refuses moves between the tables, of built-in mounts, and unknown migration ids', async () => {
      await sys.write('mounts/secret', { type: 'kv' });
      expect(await refusal(sys.write('remount', { from: 'secret', to: 'auth/secret' }))).toEqual({ status: 400, message: 'cannot move a mount between auth/ and secret engines' });
      expect(await refusal(sys.write('remount', { from: 'sys', to: 'system' }))).toEqual({ status: 400, message: 'cannot unmount or move "sys/"' });
      expect(await refusal(sys.write('remount', { from: 'nope', to: 'other' }))).toEqual({ status: 400, message: 'no mount at "nope/"' });
      expect(await refusal(sys.write('remount', { from: 'secret' }))).toEqual({ status: 400, message: 'missing required field "to"' });
      expect(await refusal(sys.read('remount/status/not-an-id'))).toEqual({ status: 404, message: 'no mount migration "not-an-id"' });
      expect(namespace.secretMounts.get('secret/')).toBeDefined();
    });
  });
});
