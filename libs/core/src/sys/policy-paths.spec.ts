import { Backend, type Caller, type MountInfo } from '@svc/framework';
import { createView } from '@svc/storage';
import { engineRequest, MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import { NamespaceRegistry } from '../namespaces/registry';
import { tokenEntry } from '../testing/fixtures';
import { nowSeconds, TokenStore } from '../tokens/token-store';
import { policyPaths } from './policy-paths';

const READER = 'path "secret/*" {\n  capabilities = ["read", "list"]\n}\n';
const WRITER = 'path "secret/app" {\n  capabilities = ["create", "update"]\n}\n';

describe('sys/policies/acl, sys/policy and sys/capabilities', () => {
  let namespaces: NamespaceRegistry;
  let tokens: TokenStore;
  let sys: MountedBackend;

  /** A service token of a namespace with these policies: its value and accessor. */
  const issue = async (policies: string[], namespace = '') => {
    const now = nowSeconds();
    const { id, entry } = await tokens.create(tokenEntry(policies, namespace, { creationTime: now, lastRenewalTime: now }));
    return { token: id, accessor: entry.accessor };
  };

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('1');
    tokens = new TokenStore(createView(barrier, 'sys/token/'));
    await tokens.load();
    // Every request here is made in a namespace that exists.
    const router = { namespaceOf: ({ mount }: { mount: MountInfo }) => namespaces.get(mount.namespace)! };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/ policies', paths: policyPaths({ namespaces, router, tokens }) }), mount, mountStorage(mount));
  });

  describe('policies/acl', () => {
    it('writes, reads, lists and deletes policies, by lower-cased name', async () => {
      expect(await sys.request('update', 'policies/acl/Reader', { policy: READER })).toBeUndefined();
      expect(await sys.read('policies/acl/READER')).toEqual({ name: 'reader', policy: READER });
      expect(await sys.list('policies/acl/')).toEqual(['default', 'reader', 'root']);

      expect(await sys.request('delete', 'policies/acl/Reader')).toBeUndefined();
      expect(await sys.list('policies/acl/')).toEqual(['default', 'root']);
      expect(await refusal(sys.read('policies/acl/reader'))).toEqual({ status: 404, message: 'no policy named "reader"' });
    });

    it('accepts a policy sent base64-encoded, and keeps its text', async () => {
      await sys.write('policies/acl/reader', { policy: Buffer.from(READER, 'utf8').toString('base64') });
      expect(await sys.read('policies/acl/reader')).toEqual({ name: 'reader', policy: READER });
    });

    it('shows the root policy, and refuses to change it or to delete the default one', async () => {
      expect(await sys.read('policies/acl/root')).toEqual({ name: 'root', policy: '' });
      expect(await refusal(sys.write('policies/acl/root', { policy: READER }))).toEqual({ status: 400, message: 'cannot update the root policy' });
      expect(await refusal(sys.request('delete', 'policies/acl/default'))).toEqual({ status: 400, message: 'cannot delete the default policy' });
      expect(await refusal(sys.request('delete', 'policies/acl/root'))).toEqual({ status: 400, message: 'cannot delete the root policy' });
    });

    it('refuses a policy that is missing, empty or not a policy', async () => {
      expect(await refusal(sys.write('policies/acl/reader', {}))).toEqual({ status: 400, message: 'missing required field "policy"' });
      expect(await refusal(sys.write('policies/acl/reader', { policy: '  ' }))).toEqual({ status: 400, message: 'policy "reader": the policy document is empty' });
      const garbled = await refusal(sys.write('policies/acl/reader', { policy: 'path "secret/*" {' }));
      expect(garbled.status).toBe(400);
      expect(garbled.message).toMatch(/^policy "reader": /);
      expect(await sys.list('policies/acl/')).toEqual(['default', 'root']);
    });

    it('keeps the policies of each namespace apart', async () => {
      await namespaces.create(namespaces.root, 'team', {});
      await sys.inNamespace('team/').write('policies/acl/reader', { policy: READER });
      expect(await sys.inNamespace('team/').list('policies/acl/')).toEqual(['default', 'reader', 'root']);
      expect(await sys.list('policies/acl/')).toEqual(['default', 'root']);
    });
  });

  describe('policy (legacy)', () => {
    it('lists, reads with `rules`, writes and deletes policies', async () => {
      await sys.write('policy/reader', { policy: READER });
      expect(await sys.read('policy')).toEqual({ keys: ['default', 'reader', 'root'], policies: ['default', 'reader', 'root'] });
      expect((await sys.request('list', 'policy/'))?.data).toEqual({ keys: ['default', 'reader', 'root'], policies: ['default', 'reader', 'root'] });
      expect(await sys.read('policy/reader')).toEqual({ name: 'reader', policy: READER, rules: READER });
      expect(await sys.read('policy/root')).toEqual({ name: 'root', policy: '', rules: '' });

      expect(await sys.request('delete', 'policy/reader')).toBeUndefined();
      expect(await refusal(sys.read('policy/reader'))).toEqual({ status: 404, message: 'no policy named "reader"' });
    });

    it('takes the deprecated `rules` with a warning, and refuses a write with neither', async () => {
      const written = await sys.request('update', 'policy/writer', { rules: WRITER });
      expect(written?.warnings).toEqual(['"rules" is deprecated, use "policy" instead']);
      expect(await sys.read('policies/acl/writer')).toEqual({ name: 'writer', policy: WRITER });
      expect(await refusal(sys.write('policy/other', {}))).toEqual({ status: 400, message: 'missing required field "policy"' });
    });
  });

  describe('capabilities', () => {
    beforeEach(async () => {
      await sys.write('policies/acl/reader', { policy: READER });
      await sys.write('policies/acl/writer', { policy: WRITER });
    });

    it('of a token, on one path (also as `capabilities`) or several', async () => {
      const { token } = await issue(['reader', 'writer']);
      // The most specific rule of the policies decides, as in Vault: secret/app is writer's alone.
      expect(await sys.write('capabilities', { token, paths: ['secret/app'] })).toEqual({ 'secret/app': ['create', 'update'], capabilities: ['create', 'update'] });
      expect(await sys.write('capabilities', { token, paths: 'secret/other, sys/mounts' })).toEqual({ 'secret/other': ['list', 'read'], 'sys/mounts': ['deny'] });
      // The deprecated `path` stands in for `paths`.
      expect(await sys.write('capabilities', { token, path: ['/secret/other'] })).toEqual({ '/secret/other': ['list', 'read'], capabilities: ['list', 'read'] });
      const { token: root } = await issue(['root']);
      expect(await sys.write('capabilities', { token: root, paths: ['anything'] })).toEqual({ anything: ['root'], capabilities: ['root'] });
    });

    it('of the calling token', async () => {
      const { token, accessor } = await issue(['reader']);
      const caller: Caller = { tokenAccessor: accessor, tokenId: token, policies: ['reader'], entityId: '', displayName: 'token', namespace: '', meta: {} };
      const asked = await sys.backend.handle({ ...engineRequest(sys.mount, 'update', 'capabilities-self', { paths: ['secret/x'] }), caller });
      expect(asked?.data).toEqual({ 'secret/x': ['list', 'read'], capabilities: ['list', 'read'] });
      expect(await refusal(sys.write('capabilities-self', { paths: ['secret/x'] }))).toEqual({ status: 403, message: 'permission denied' });
    });

    it('of a token by its accessor', async () => {
      const { accessor } = await issue(['writer']);
      expect(await sys.write('capabilities-accessor', { accessor, paths: ['secret/app', 'secret/x'] })).toEqual({ 'secret/app': ['create', 'update'], 'secret/x': ['deny'] });
    });

    it("read from the token's own namespace, for paths of the request's namespace", async () => {
      const team = await namespaces.create(namespaces.root, 'team', {});
      await namespaces.create(team, 'apps', {});
      await sys.inNamespace('team/').write('policies/acl/apps', { policy: 'path "apps/secret/*" {\n  capabilities = ["read"]\n}\n' });
      const { token } = await issue(['apps'], 'team/');
      expect(await sys.inNamespace('team/apps/').write('capabilities', { token, paths: ['secret/x'] })).toEqual({ 'secret/x': ['read'], capabilities: ['read'] });
      expect(await sys.inNamespace('team/').write('capabilities', { token, paths: ['secret/x'] })).toEqual({ 'secret/x': ['deny'], capabilities: ['deny'] });
    });

    it('grants a token nothing above or beside its own namespace, whatever its policies', async () => {
      const team = await namespaces.create(namespaces.root, 'team', {});
      await namespaces.create(namespaces.root, 'teams', {});
      await sys.inNamespace('team/').write('policies/acl/all', { policy: 'path "*" {\n  capabilities = ["read"]\n}\n' });
      const { token } = await issue(['all'], team.path);
      expect(await sys.inNamespace('team/').write('capabilities', { token, paths: ['secret/x'] })).toEqual({ 'secret/x': ['read'], capabilities: ['read'] });
      expect(await sys.write('capabilities', { token, paths: ['secret/x'] })).toEqual({ 'secret/x': ['deny'], capabilities: ['deny'] });
      expect(await sys.inNamespace('teams/').write('capabilities', { token, paths: ['secret/x'] })).toEqual({ 'secret/x': ['deny'], capabilities: ['deny'] });
    });

    it('refuses unknown tokens and accessors, missing paths, and tokens of a namespace deleted since', async () => {
      const { token } = await issue(['reader']);
      expect(await refusal(sys.write('capabilities', { token: 'hvs.nope', paths: ['secret/x'] }))).toEqual({ status: 400, message: 'invalid token' });
      expect(await refusal(sys.write('capabilities-accessor', { accessor: 'nope', paths: ['secret/x'] }))).toEqual({ status: 400, message: 'invalid accessor' });
      expect(await refusal(sys.write('capabilities', { token, paths: [] }))).toEqual({ status: 400, message: 'missing required field "paths"' });
      expect(await refusal(sys.write('capabilities', { paths: ['secret/x'] }))).toEqual({ status: 400, message: 'missing required field "token"' });

      const gone = await namespaces.create(namespaces.root, 'gone', {});
      const { token: orphaned } = await issue(['default'], 'gone/');
      await namespaces.remove(gone);
      expect(await refusal(sys.write('capabilities', { token: orphaned, paths: ['secret/x'] }))).toEqual({ status: 400, message: "the token's namespace no longer exists" });
    });
  });
});
