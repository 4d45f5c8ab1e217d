import { Backend, type Response } from '@svc/framework';
import { VERSION } from '@svc/api-contract';
import { engineRequest, MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import type { MountEntry } from '../mounts/mount-table';
import { NamespaceRegistry } from '../namespaces/registry';
import { tokenEntry } from '../testing/fixtures';
import type { TokenEntry } from '../tokens/token-store';
import { internalUiPaths, type InternalUiPathsDeps } from './internal-ui-paths';
import { describeMount } from './mount-paths';

const DEFAULTS = { default_lease_ttl: 0, max_lease_ttl: 0 };

const READER_POLICY = `
path "secret/data/*" { capabilities = ["read", "list"] }
path "sys/mounts" { capabilities = ["read"] }
path "auth/userpass/login/*" { capabilities = ["update"] }
path "team/secret/*" { capabilities = ["read"] }
path "hidden/*" { capabilities = ["deny"] }
`;

/** Tokens by value. */
const TOKENS = new Map<string, TokenEntry>([
  ['root-token', tokenEntry(['root'], '', { accessor: 'root' })],
  ['reader-token', tokenEntry(['reader'], '', { accessor: 'reader' })],
  ['team-token', tokenEntry(['inner-reader'], 'team/', { accessor: 'team' })],
  ['team-reader-token', tokenEntry(['reader'], 'team/', { accessor: 'team-reader' })],
  ['stranded-token', tokenEntry(['reader'], 'gone/', { accessor: 'stranded' })],
]);

describe('sys/internal/ui', () => {
  let sys: MountedBackend;
  let namespaces: NamespaceRegistry;
  let mounts: Record<'sys' | 'secret' | 'public' | 'userpass' | 'hidden', MountEntry>;

  beforeAll(async () => {
    const barrier = unsealedBarrier();
    namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('2');
    const { root } = namespaces;
    mounts = {
      sys: root.secretMounts.get('sys/')!,
      secret: root.secretMounts.get('secret/')!,
      public: await root.secretMounts.mount({ path: 'public', type: 'kv', description: 'shared', options: { version: '2' }, config: { listing_visibility: 'unauth' } }, DEFAULTS),
      userpass: await root.authMounts.mount({ path: 'userpass', type: 'userpass', config: { listing_visibility: 'unauth' } }, DEFAULTS),
      hidden: await root.secretMounts.mount({ path: 'hidden', type: 'kv' }, DEFAULTS),
    };
    await root.policies.put('reader', READER_POLICY);
    const team = await namespaces.create(root, 'team', {});
    await namespaces.create(root, 'ops', {});
    await namespaces.create(team, 'inner', {});
    await team.policies.put('inner-reader', 'path "inner/secret/*" { capabilities = ["read"] }');
    await team.policies.put('reader', READER_POLICY);

    const deps: InternalUiPathsDeps = {
      namespaces,
      tokens: { lookup: async (value) => TOKENS.get(value) ?? null },
      router: { namespaceOf: ({ mount }) => namespaces.get(mount.namespace)! },
    };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'UI.', paths: internalUiPaths(deps) }), mount, mountStorage(mount));
  });

  /** A read, with the calling token `tokenId` when given, in `namespace` (root by default). */
  const read = (path: string, tokenId?: string, namespace = ''): Promise<Response | undefined> =>
    sys.backend.handle({
      ...engineRequest({ ...sys.mount, namespace }, 'read', path),
      ...(tokenId ? { caller: { tokenAccessor: TOKENS.get(tokenId)!.accessor, tokenId, policies: [], entityId: '', displayName: 'token', namespace, meta: {} } } : {}),
    });

  describe('mounts', () => {
    it('shows a caller without a token only the mounts tuned visible, and little of them', async () => {
      expect((await read('internal/ui/mounts'))?.data).toEqual({
        secret: { 'public/': { type: 'kv', description: 'shared', options: { version: '2' } } },
        auth: { 'userpass/': { type: 'userpass', description: '', options: null } },
      });
    });

    it('shows a token the mounts it reaches in full, and the visible ones as to anyone', async () => {
      expect((await read('internal/ui/mounts', 'reader-token'))?.data).toEqual({
        // sys/mounts is a path under sys/: the UI may show it.
        secret: { 'sys/': describeMount(mounts.sys), 'secret/': describeMount(mounts.secret), 'public/': { type: 'kv', description: 'shared', options: { version: '2' } } },
        auth: { 'userpass/': describeMount(mounts.userpass) },
      });
      const everything = (await read('internal/ui/mounts', 'root-token'))?.data;
      expect(Object.keys(everything?.secret ?? {}).sort()).toEqual(['cubbyhole/', 'hidden/', 'identity/', 'public/', 'secret/', 'sys/']);
      expect(everything?.auth).toEqual({ 'token/': expect.objectContaining({ type: 'token' }), 'userpass/': describeMount(mounts.userpass) });
    });

    it("shows a token of a child namespace, above its own, only what anyone sees", async () => {
      expect((await read('internal/ui/mounts', 'team-reader-token'))?.data).toEqual((await read('internal/ui/mounts'))?.data);
    });

    it('reads one mount the token reaches, secrets engine or auth method', async () => {
      expect((await read('internal/ui/mounts/secret', 'reader-token'))?.data).toEqual({ ...describeMount(mounts.secret), path: 'secret/' });
      expect((await read('internal/ui/mounts/auth/userpass/', 'reader-token'))?.data).toEqual({ ...describeMount(mounts.userpass), path: 'auth/userpass/' });
    });

    it('refuses one mount without a token, out of reach (visible or not), denied, or not there', async () => {
      const denied = (path: string) => ({ status: 403, message: `preflight capability check returned 403, please ensure client's policies grant access to path "${path}"` });
      expect(await refusal(read('internal/ui/mounts/secret'))).toEqual(denied('secret'));
      expect(await refusal(read('internal/ui/mounts/public', 'reader-token'))).toEqual(denied('public'));
      expect(await refusal(read('internal/ui/mounts/hidden', 'reader-token'))).toEqual(denied('hidden'));
      expect(await refusal(read('internal/ui/mounts/nothing/here', 'root-token'))).toEqual(denied('nothing/here'));
    });

    it("refuses a token whose namespace no longer exists", async () => {
      expect(await refusal(read('internal/ui/mounts', 'stranded-token'))).toEqual({ status: 400, message: "the token's namespace no longer exists" });
    });
  });

  describe('resultant-acl', () => {
    it("answers the calling token's rules, exact paths apart from globs", async () => {
      expect((await read('internal/ui/resultant-acl', 'reader-token'))?.data).toEqual({
        root: false,
        exact_paths: { 'sys/mounts': { capabilities: ['read'] } },
        glob_paths: {
          'secret/data/': { capabilities: ['list', 'read'] },
          'auth/userpass/login/': { capabilities: ['update'] },
          'team/secret/': { capabilities: ['read'] },
          'hidden/': { capabilities: ['deny'] },
        },
      });
    });

    it('answers root for a root token, and refuses a caller without one', async () => {
      expect((await read('internal/ui/resultant-acl', 'root-token'))?.data).toEqual({ root: true, exact_paths: {}, glob_paths: {} });
      expect(await refusal(read('internal/ui/resultant-acl'))).toEqual({ status: 403, message: 'permission denied' });
    });
  });

  describe('namespaces', () => {
    it('lists the namespaces below the current one that the token reaches', async () => {
      expect((await read('internal/ui/namespaces', 'root-token'))?.data).toEqual({ keys: ['ops/', 'team/', 'team/inner/'] });
      expect((await read('internal/ui/namespaces', 'reader-token'))?.data).toEqual({ keys: ['team/'] });
      expect((await read('internal/ui/namespaces', 'team-token', 'team/'))?.data).toEqual({ keys: ['inner/'] });
    });

    it('lists none to a caller without a token', async () => {
      expect((await read('internal/ui/namespaces'))?.data).toEqual({ keys: [] });
    });
  });

  it('answers the server version and no feature flags', async () => {
    expect((await read('internal/ui/version'))?.data).toEqual({ version: VERSION });
    expect((await read('internal/ui/feature-flags'))?.raw).toEqual({ feature_flags: [] });
  });
});
