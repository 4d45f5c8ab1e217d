import { readdirSync } from 'node:fs';
import pino from 'pino';
import { MemoryLockManager } from '@svc/locks';
import { Barrier, CachedPhysical, createView, InmemPhysical, Keyring } from '@svc/storage';
import { temporaryDirectoryPerTest } from '@svc/testing';
import { checkConfig, CONFIG_PREFIX } from './config';
import { SnapshotScheduler } from './scheduler';

describe('SnapshotScheduler', () => {
  const directory = temporaryDirectoryPerTest('svc-scheduler-');

  it('two gateway workers, each reading through its own cache of one store, take one snapshot per interval', async () => {
    const dir = directory();
    const shared = new InmemPhysical();
    const keyring = Keyring.generate();
    const locks = new MemoryLockManager();
    let now = Date.parse('2030-01-01T00:00:00Z');
    const [first, second] = [0, 1].map(() => {
      const physical = new CachedPhysical(shared);
      const barrier = new Barrier(physical);
      barrier.unseal(keyring);
      return { barrier, scheduler: new SnapshotScheduler({ physical, barrier, locks, logger: pino({ level: 'silent' }), now: () => new Date(now) }) };
    });
    const config = checkConfig({ interval: 60, retain: 10, path_prefix: dir, storage_type: 'local', local_max_space: 100_000_000, file_prefix: 'app' });
    await createView(first.barrier, '').putJSON(`${CONFIG_PREFIX}hourly`, config);

    await first.scheduler.tick();
    now += 60_000;
    // Due again: the second worker runs it, while the first still caches the status of its own run.
    await second.scheduler.tick();
    now += 500;
    await first.scheduler.tick();

    expect(readdirSync(dir).filter((name) => name.startsWith('app-'))).toHaveLength(2);
  });
});
