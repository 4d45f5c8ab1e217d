import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STORE_BACKENDS, storePerTest } from '@svc/testing';
import { EmbeddedPhysical } from './embedded/embedded';
import { createMigrationStore } from './factory';
import { LegacyEmbeddedPhysical } from './legacy-embedded';
import { InmemPhysical } from './inmem';
import { clearMigrationLock, migrateStorage, MigrationStopped, MIGRATION_LOCK_KEY, readMigrationLock, refuseUnfinishedMigration, type MigrationProgress } from './migrate';
import type { Physical } from './types';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/**
 * Keys whose order by key differs from their order by (directory, name), as SQL storage scans
 * them: 'a/b/c' sorts before 'a0' by key but after it by directory; '-' sorts before '/'.
 */
const KEYS = [
  'a', 'a/b/c', 'a/d', 'a0', 'a-b/x', 'core/keyring', 'core/replication/x', 'core/seal-config', 'z/deep/er/key',
  ...Array.from({ length: 30 }, (_, i) => `many/k${String(i).padStart(3, '0')}`),
];

/** A store with entries (binary values), a log partly trimmed and logging on, and metadata. */
async function fill(store: Physical): Promise<void> {
  await store.put('early', bytes('written before logging'));
  await store.log.setLogging(true);
  for (const key of KEYS) await store.put(key, Buffer.concat([Buffer.from([0, 255]), bytes(key)]));
  await store.transaction(async (tx) => {
    await tx.delete('a0');
    await tx.putMeta('merkle/root', bytes('root'));
    await tx.putMeta('merkle/replicated/page/000', Buffer.from([1, 2, 3]));
  });
  await store.log.trimThrough(3);
}

/** Everything a migration copies, comparable. */
async function contents(store: Physical) {
  const logging = await store.log.logging();
  return store.snapshot(async (snapshot) => {
    const entries: [string, string][] = [];
    for await (const { key, value } of snapshot.entries) entries.push([key, value.toString('hex')]);
    return {
      entries: entries.sort(([a], [b]) => (a < b ? -1 : 1)),
      meta: (await snapshot.meta('')).map(({ name, value }) => [name, value.toString('hex')]),
      log: (await snapshot.entriesAfter(0, 1000)).map(({ idx, op, key, value }) => [idx, op, key, value?.toString('hex') ?? null]),
      lastIndex: snapshot.lastIndex,
      logging,
    };
  });
}

async function filledInmem(): Promise<InmemPhysical> {
  const store = new InmemPhysical();
  await fill(store);
  return store;
}

/** Stops the migration once `batches` batches of entries are written. */
function stopAfter(batches: number) {
  const controller = new AbortController();
  let written = 0;
  return {
    signal: controller.signal,
    onProgress: (progress: MigrationProgress) => {
      if (progress.phase === 'entries' && ++written === batches) controller.abort();
    },
  };
}

async function stopped(migration: Promise<unknown>): Promise<MigrationStopped> {
  const error = await migration.then(() => undefined, (err: unknown) => err);
  expect(error).toBeInstanceOf(MigrationStopped);
  return error as MigrationStopped;
}

describe.each(STORE_BACKENDS)('storage migration: $name', (backend) => {
  let store: Physical;
  storePerTest(backend, (fixture) => {
    store = fixture.store;
  });

  it('copies every entry, the metadata and the log into the store, and out of it again', async () => {
    const source = await filledInmem();
    const progress: MigrationProgress[] = [];
    const result = await migrateStorage(source, store, { batchSize: 7, onProgress: (event) => progress.push(event) });
    const expected = await contents(source);
    // 'early' in, 'a0' deleted.
    expect(expected.entries).toHaveLength(KEYS.length);
    expect(expected.log[0][0]).toBe(4);
    expect(await contents(store)).toEqual(expected);
    expect(result).toEqual({ entries: KEYS.length, metadata: 2, logEntries: expected.log.length, log: { lastIndex: expected.lastIndex, logging: true } });
    expect(progress.filter(({ phase }) => phase === 'entries').map(({ copied }) => copied)).toEqual([7, 14, 21, 28, 35, KEYS.length]);
    expect(progress.filter(({ phase }) => phase !== 'entries')).toEqual([
      { phase: 'metadata', copied: 2 },
      ...[7, 14, 21, 28, 35, expected.log.length].map((copied) => ({ phase: 'log', copied })),
    ]);
    expect(await readMigrationLock(store)).toBeUndefined();

    const back = new InmemPhysical();
    await migrateStorage(store, back, { batchSize: 5 });
    expect(await contents(back)).toEqual(expected);
    // The copy goes on logging from the source's last index.
    await back.put('after', bytes('x'));
    expect((await back.log.entriesAfter(expected.lastIndex, 10)).map(({ idx, key }) => [idx, key])).toEqual([[expected.lastIndex + 1, 'after']]);
  });

  it('stops after a batch when asked, refuses to start over, and resumes from where it stopped', async () => {
    await fill(store);
    const expected = await contents(store);
    const destination = new InmemPhysical();
    const first = await stopped(migrateStorage(store, destination, { batchSize: 7, ...stopAfter(1) }));
    expect(first.message).toBe('the migration was interrupted');
    expect(first.copied).toBe(7);
    expect(await readMigrationLock(destination)).toEqual({ started: expect.any(String), resumeFrom: first.resumeFrom });
    await expect(refuseUnfinishedMigration(destination)).rejects.toThrow(
      `this storage is the destination of a storage migration that has not finished (started ${(await readMigrationLock(destination))!.started}), so its data is incomplete: ` +
        `finish the migration (svc operator migrate: run it again with -start=${JSON.stringify(first.resumeFrom)}), or clear its lock with svc operator migrate -reset if the store is to be used as it is`,
    );
    await expect(migrateStorage(store, destination)).rejects.toThrow(
      `the destination holds the lock of a migration into it that has not finished (started ${(await readMigrationLock(destination))!.started}): ` +
        `to resume it, run it again with -start=${JSON.stringify(first.resumeFrom)}; to start again, use an empty destination`,
    );
    await expect(migrateStorage(store, destination, { start: `${first.resumeFrom}~` })).rejects.toThrow(`-start=${JSON.stringify(`${first.resumeFrom}~`)} is past where the interrupted migration stopped`);

    // Resumed, stopped again later on, and resumed to the end.
    const second = await stopped(migrateStorage(store, destination, { batchSize: 7, start: first.resumeFrom, ...stopAfter(2) }));
    expect(second.resumeFrom >= first.resumeFrom).toBe(true);
    await migrateStorage(store, destination, { batchSize: 7, start: second.resumeFrom });
    expect(await contents(destination)).toEqual(expected);
    await expect(refuseUnfinishedMigration(destination)).resolves.toBeUndefined();
  });

  it('refuses a destination that holds anything, and a source that an unfinished migration is filling', async () => {
    const source = await filledInmem();
    await store.put('someone/else', bytes('x'));
    await expect(migrateStorage(source, store)).rejects.toThrow(
      'the destination is not empty: migrate into a new table or data directory (or resume an interrupted migration with -start)',
    );
    await store.delete('someone/else');
    await store.transaction((tx) => tx.putMeta('merkle/root', bytes('x')));
    await expect(migrateStorage(source, store)).rejects.toThrow('the destination is not empty');

    const half = new InmemPhysical();
    await stopped(migrateStorage(source, half, { batchSize: 7, ...stopAfter(1) }));
    await expect(migrateStorage(half, new InmemPhysical())).rejects.toThrow(/^the source is itself the destination of a storage migration that has not finished \(started .*\): its data is incomplete; finish that migration first$/);
    expect(await source.get(MIGRATION_LOCK_KEY)).toBeNull();
  });

  it('clears the lock of a migration that will not finish', async () => {
    const source = await filledInmem();
    const stop = await stopped(migrateStorage(source, store, { batchSize: 7, ...stopAfter(1) }));
    expect(await clearMigrationLock(store)).toEqual({ started: expect.any(String), resumeFrom: stop.resumeFrom });
    await expect(refuseUnfinishedMigration(store)).resolves.toBeUndefined();
    expect(await clearMigrationLock(store)).toBeUndefined();
  });
});

describe('storage migration from the earlier embedded format', () => {
  it('moves a PGlite data directory into a new embedded directory, which the server then opens', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-migrate-earlier-'));
    try {
      const earlierPath = join(root, 'earlier');
      const earlier = new LegacyEmbeddedPhysical({ path: earlierPath });
      await earlier.open();
      await fill(earlier);
      const expected = await contents(earlier);
      await earlier.close();
      await expect(new EmbeddedPhysical({ path: earlierPath }).open()).rejects.toThrow(/earlier versions/);

      const source = await createMigrationStore({ type: 'embedded', options: { path: earlierPath } });
      const destination = await createMigrationStore({ type: 'embedded', options: { path: join(root, 'new') } });
      await Promise.all([source.open(), destination.open()]);
      expect([source.constructor.name, destination.constructor.name]).toEqual(['LegacyEmbeddedPhysical', 'EmbeddedPhysical']);
      try {
        await migrateStorage(source, destination, { batchSize: 7 });
      } finally {
        await Promise.all([source.close(), destination.close()]);
      }
      const moved = new EmbeddedPhysical({ path: join(root, 'new') });
      await moved.open();
      try {
        expect(await contents(moved)).toEqual(expected);
      } finally {
        await moved.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
