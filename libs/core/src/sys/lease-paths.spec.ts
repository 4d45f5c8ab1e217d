import pino from 'pino';
import { Backend } from '@svc/framework';
import { MemoryLockManager } from '@svc/locks';
import { createView, type StorageView } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, testMount, unsealedBarrier } from '@svc/testing';
import { ExpirationManager } from '../leases/expiration';
import type { LeaseEntry } from '../leases/lease';
import type { Namespace } from '../namespaces/namespace';
import { NamespaceRegistry } from '../namespaces/registry';
import { leaseEntry } from '../testing/fixtures';
import { nowSeconds } from '../tokens/token-store';
import { leasePaths, type LeasePathsDeps } from './lease-paths';

const CREDS = 'database/creds/app';

/** What the engines were asked through the lease lifecycle, by the namespace path it ran in. */
type LifecycleCall = [operation: string, namespace: string, ...args: unknown[]];

describe('sys/leases', () => {
  let sys: MountedBackend;
  let leases: ExpirationManager;
  let leaseStorage: StorageView;
  let root: Namespace;
  let team: Namespace;
  /** Leases the engines revoked (through the expiration manager's revoker). */
  let revoked: string[];
  let lifecycle: LifecycleCall[];
  /** A lease renewed once, whose engine refused to revoke it twice. */
  let retried: LeaseEntry;

  beforeEach(async () => {
    const barrier = unsealedBarrier();
    const namespaces = new NamespaceRegistry(barrier);
    await namespaces.load('1');
    root = namespaces.root;
    team = await namespaces.create(root, 'team', {});
    revoked = [];
    lifecycle = [];
    leaseStorage = createView(barrier, 'sys/expire/');
    leases = new ExpirationManager(leaseStorage, new MemoryLockManager(), async (entry) => void revoked.push(entry.leaseId), pino({ level: 'silent' }));
    const deps: LeasePathsDeps = {
      leases,
      leaseLifecycle: {
        renew: async (namespace, leaseId, increment) => {
          lifecycle.push(['renew', namespace.path, leaseId, increment]);
          const now = nowSeconds();
          return leaseEntry(leaseId, { lastRenewalTime: now, expireTime: now + increment });
        },
        revokeUnder: async (namespace, prefix) => void lifecycle.push(['revoke-prefix', namespace.path, prefix]),
        forceRevokeUnder: async (namespace, prefix) => void lifecycle.push(['revoke-force', namespace.path, prefix]),
      },
      router: { namespaceOf: ({ mount }) => (mount.namespace === team.path ? team : root) },
    };
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Leases.', paths: leasePaths(deps) }), mount, mountStorage(mount));
    await leases.put(root.record.id, leaseEntry(`${CREDS}/a1`));
    retried = leaseEntry(`${CREDS}/a2`, { lastRenewalTime: nowSeconds() - 60, lastRevokeError: 'the database said no', revokeAttempts: 2 });
    await leases.put(root.record.id, retried);
  });

  /** An update in the team namespace (through its sys/ mount). */
  const inTeam = (path: string, data: Record<string, unknown> = {}) => sys.inNamespace(team.path).request('update', path, data);

  it('looks up a lease: its times, TTL and revocation attempts', async () => {
    const issued = leaseEntry(`${CREDS}/a1`);
    const found = await sys.write('leases/lookup', { lease_id: `${CREDS}/a1` });
    expect(found).toEqual({
      id: `${CREDS}/a1`,
      issue_time: new Date(issued.issueTime * 1000).toISOString(),
      expire_time: new Date(issued.expireTime * 1000).toISOString(),
      last_renewal: null,
      renewable: true,
      ttl: expect.any(Number),
      revoke_attempts: 0,
      last_revoke_error: null,
    });
    expect(found.ttl).toBeGreaterThanOrEqual(3598);
    expect(found.ttl).toBeLessThanOrEqual(3600);

    expect(await sys.write('leases/lookup', { lease_id: `${CREDS}/a2` })).toMatchObject({
      last_renewal: new Date(retried.lastRenewalTime * 1000).toISOString(),
      revoke_attempts: 2,
      last_revoke_error: 'the database said no',
    });
  });

  it("refuses a lookup of no lease, of an unknown one, and of another namespace's", async () => {
    expect(await refusal(sys.write('leases/lookup'))).toEqual({ status: 400, message: 'missing required field "lease_id"' });
    expect(await refusal(sys.write('leases/lookup', { lease_id: `${CREDS}/none` }))).toEqual({ status: 400, message: 'invalid lease' });
    expect(await refusal(inTeam('leases/lookup', { lease_id: `${CREDS}/a1` }))).toEqual({ status: 400, message: 'invalid lease' });
  });

  it('lists the lease ids under a prefix', async () => {
    await leases.put(root.record.id, leaseEntry('database/creds/other/b1'));
    expect(await sys.list('leases/lookup/database/creds/')).toEqual(['app/', 'other/']);
    expect(await sys.list(`leases/lookup/${CREDS}/`)).toEqual(['a1', 'a2']);
    expect(await sys.list('leases/lookup/nothing/')).toEqual([]);
  });

  it('renews a lease named in the body or the URL, answering the duration granted', async () => {
    const renewed = await sys.request('update', 'leases/renew', { lease_id: `${CREDS}/a1`, increment: '30m' });
    expect(renewed?.raw).toEqual({
      request_id: expect.any(String),
      lease_id: `${CREDS}/a1`,
      renewable: true,
      lease_duration: 1800,
      data: null,
      wrap_info: null,
      warnings: null,
      auth: null,
    });
    // Vault's URL form, and its legacy sys/renew.
    await sys.write(`leases/renew/${CREDS}/a2`, { increment: 60 });
    await inTeam(`renew/${CREDS}/a3`);
    expect(lifecycle).toEqual([
      ['renew', '', `${CREDS}/a1`, 1800],
      ['renew', '', `${CREDS}/a2`, 60],
      ['renew', 'team/', `${CREDS}/a3`, 0],
    ]);
  });

  it('refuses a renewal that names no lease', async () => {
    expect(await refusal(sys.write('leases/renew', { increment: 60 }))).toEqual({ status: 400, message: 'lease_id must be specified' });
    expect(lifecycle).toEqual([]);
  });

  it('revokes a lease through its engine, named in the body or the URL', async () => {
    expect(await sys.request('update', 'leases/revoke', { lease_id: `${CREDS}/a1` })).toBeUndefined();
    await sys.write(`revoke/${CREDS}/a2`);
    expect(revoked).toEqual([`${CREDS}/a1`, `${CREDS}/a2`]);
    expect(await sys.list(`leases/lookup/${CREDS}/`)).toEqual([]);
  });

  it('refuses to revoke no lease, or one that does not exist', async () => {
    expect(await refusal(sys.write('leases/revoke'))).toEqual({ status: 400, message: 'lease_id must be specified' });
    expect(await refusal(sys.write('leases/revoke', { lease_id: `${CREDS}/none` }))).toEqual({ status: 400, message: 'invalid lease' });
    expect(await refusal(inTeam(`leases/revoke/${CREDS}/a1`))).toEqual({ status: 400, message: 'invalid lease' });
    expect(revoked).toEqual([]);
  });

  it('revokes by prefix, forced or not, in the namespace of the request', async () => {
    expect(await sys.request('update', `leases/revoke-prefix/${CREDS}`)).toBeUndefined();
    await inTeam('revoke-prefix/database/');
    await sys.write(`leases/revoke-force/${CREDS}/`);
    await inTeam('revoke-force/database/creds');
    expect(lifecycle).toEqual([
      ['revoke-prefix', '', CREDS],
      ['revoke-prefix', 'team/', 'database/'],
      ['revoke-force', '', `${CREDS}/`],
      ['revoke-force', 'team/', 'database/creds'],
    ]);
  });

  it('tidies the index of leases by token, counting the entries that pointed at nothing', async () => {
    // A lease gone without its index entry, as an interrupted revocation leaves it.
    await leaseStorage.delete(ExpirationManager.key(root.record.id, `${CREDS}/a1`));
    const tidied = await sys.request('update', 'leases/tidy');
    expect(tidied).toEqual({ data: { removed: 1 }, warnings: ['Tidy operation successfully completed'] });
    expect((await sys.request('update', 'leases/tidy'))?.data).toEqual({ removed: 0 });
  });
});
