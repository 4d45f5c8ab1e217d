import pino from 'pino';
import { ServiceError } from '@svc/api-contract';
import { MemoryLockManager } from '@svc/locks';
import { CachedPhysical, createView, InmemPhysical } from '@svc/storage';
import { leaseEntry } from '../testing/fixtures';
import { ExpirationManager } from './expiration';
import type { LeaseEntry } from './lease';

const NAMESPACE = 'root-id';

/** A lease no token created. */
const lease = (leaseId: string): LeaseEntry => leaseEntry(leaseId, { tokenAccessor: '' });

describe('ExpirationManager', () => {
  const ids = ['database/creds/app/a1', 'database/creds/app/sub/a2', 'database/creds/app2/b1', 'database/creds/application/c1'];
  let manager: ExpirationManager;
  let revoked: string[];
  let logLines: string[];
  /** Leases whose engine refuses to revoke them. */
  let refusing: Set<string>;

  beforeEach(async () => {
    revoked = [];
    logLines = [];
    refusing = new Set();
    const logger = pino({}, { write: (line: string) => void logLines.push(line) });
    const revoker = async (entry: LeaseEntry) => {
      if (refusing.has(entry.leaseId)) throw ServiceError.badGateway('revoke user failed: the database said no');
      revoked.push(entry.leaseId);
    };
    manager = new ExpirationManager(createView(new InmemPhysical(), 'sys/expire/'), new MemoryLockManager(), revoker, logger);
    for (const id of ids) await manager.put(NAMESPACE, lease(id));
  });

  it('matches a revoke-prefix by whole path segments, or a whole lease id', async () => {
    const under = (prefix: string) => manager.idsUnder(NAMESPACE, prefix);
    expect(await under('database/creds/app')).toEqual(['database/creds/app/a1', 'database/creds/app/sub/a2']);
    expect(await under('database/creds/app/')).toEqual(['database/creds/app/a1', 'database/creds/app/sub/a2']);
    expect(await under('database/creds/app2/b1')).toEqual(['database/creds/app2/b1']);
    expect(await under('database/cre')).toEqual([]);
    expect((await under('')).sort()).toEqual([...ids].sort());
    await expect(under('database/..')).rejects.toThrow(`invalid lease prefix "database/..": '..' segments are not allowed`);
  });

  it('a refused revocation stays on the lease; forced, it is logged and the lease removed', async () => {
    const id = 'database/creds/app/a1';
    refusing.add(id);
    await expect(manager.revokeKey(ExpirationManager.key(NAMESPACE, id))).rejects.toThrow(ServiceError);
    expect(await manager.get(NAMESPACE, id)).toMatchObject({ revokeAttempts: 1, lastRevokeError: 'revoke user failed: the database said no' });

    await manager.revokeKey(ExpirationManager.key(NAMESPACE, id), true);
    expect(await manager.get(NAMESPACE, id)).toBeNull();
    const logged = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(expect.objectContaining({ lease: id, error: 'revoke user failed: the database said no', level: 40 }));

    // Forced or not, an engine that agrees revokes.
    await manager.revokeKey(ExpirationManager.key(NAMESPACE, 'database/creds/app2/b1'), true);
    expect(revoked).toEqual(['database/creds/app2/b1']);
  });

  it('a lease another replica revoked is not revoked again by one whose read cache still holds it', async () => {
    const shared = new InmemPhysical();
    const locks = new MemoryLockManager();
    const logger = pino({ level: 'silent' });
    const revoker = async (entry: LeaseEntry) => void revoked.push(entry.leaseId);
    const [first, second] = [0, 1].map(() => new ExpirationManager(createView(new CachedPhysical(shared), 'sys/expire/'), locks, revoker, logger));
    const id = 'database/creds/app/cached';
    await first.put(NAMESPACE, lease(id));
    // The second replica reads the lease (a lookup) and keeps it in its cache.
    expect(await second.get(NAMESPACE, id)).not.toBeNull();
    await first.revokeKey(ExpirationManager.key(NAMESPACE, id));
    await second.revokeKey(ExpirationManager.key(NAMESPACE, id));
    expect(revoked).toEqual([id]);
  });
});
