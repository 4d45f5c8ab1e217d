import { randomBytes } from 'node:crypto';
import { CachedPhysical, InmemPhysical, Keyring, PostgresPhysical } from '@svc/storage';
import { dropTable, POSTGRES_URL } from '@svc/testing';
import { KvHarness, kvMount } from './testing/harness';

const WRITERS = 20;

/**
 * WRITERS writers, spread over the given replicas, all write with the same `cas`: exactly one may
 * succeed, the rest see a stale version, and the key ends with exactly one new version.
 */
async function expectOneWinner(replicas: KvHarness[], path: string, cas: number): Promise<void> {
  const outcomes = await Promise.all(
    Array.from({ length: WRITERS }, (_, writer) =>
      replicas[writer % replicas.length].write(`data/${path}`, { data: { writer }, options: { cas } }),
    ),
  );
  const winners = outcomes.filter((outcome) => outcome.status === 200);
  expect(winners).toHaveLength(1);
  expect(winners[0].data).toMatchObject({ version: cas + 1 });
  const losers = outcomes.filter((outcome) => outcome.status !== 200);
  expect(losers.map((outcome) => outcome.errors)).toEqual(
    Array.from({ length: WRITERS - 1 }, () => ['check-and-set parameter did not match the current version']),
  );

  const latest = await replicas[0].read(`data/${path}`);
  expect(latest.data?.metadata).toMatchObject({ version: cas + 1 });
  expect(outcomes.indexOf(winners[0])).toBe((latest.data?.data as { writer: number }).writer);
}

describe('kv check-and-set under concurrent writers', () => {
  it('lets exactly one of 20 writers with the same cas through (in-memory storage)', async () => {
    const kv = KvHarness.inmem('2');
    await expectOneWinner([kv], 'race', 0);
    await expectOneWinner([kv], 'race', 1);
  });

  describe('on PostgreSQL, two replicas with their own connection pools', () => {
    const table = `svc_kv_test_${process.pid}_${randomBytes(6).toString('hex')}`;
    const stores = [0, 1].map(() => new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 }));

    beforeAll(async () => {
      for (const store of stores) await store.open();
    });

    afterAll(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await dropTable(table);
    });

    it('lets exactly one of 20 writers with the same cas through', async () => {
      const keyring = Keyring.generate();
      const mount = kvMount('2');
      const replicas = stores.map((store) => KvHarness.over(store, keyring, mount));
      await expectOneWinner(replicas, 'shared/race', 0);
      await expectOneWinner(replicas, 'shared/race', 1);
      expect((await replicas[1].read('metadata/shared/race')).data).toMatchObject({ current_version: 2 });
    });

    it('decides a write from a replica whose cache is behind under the key\'s lock, as if it were current', async () => {
      const keyring = Keyring.generate();
      const mount = kvMount('2');
      // Each replica caches reads; nothing tells either of the other's writes.
      const [first, behind] = stores.map((store) => KvHarness.over(new CachedPhysical(store), keyring, mount));
      await first.write('data/stale', { data: { n: 1 } });
      expect((await behind.read('data/stale')).data?.metadata).toMatchObject({ version: 1 });
      await first.write('data/stale', { data: { n: 2 } });

      const written = await behind.write('data/stale', { data: { n: 3 }, options: { cas: 2 } });
      expect(written).toMatchObject({ status: 200, data: { version: 3 } });
      expect(await behind.write('data/stale', { data: { n: 4 }, options: { cas: 2 } })).toMatchObject({ status: 400, errors: ['check-and-set parameter did not match the current version'] });
      const uncached = KvHarness.over(stores[0], keyring, mount);
      expect((await uncached.read('metadata/stale')).data).toMatchObject({ current_version: 3 });

      // A replica whose cache knows nothing of the key takes it for new at first.
      const fresh = () => KvHarness.over(new CachedPhysical(stores[1]), keyring, mount);
      expect(await fresh().write('data/stale', { data: { n: 5 }, options: { cas: 0 } })).toMatchObject({ status: 400, errors: ['check-and-set parameter did not match the current version'] });
      expect(await fresh().write('data/stale', { data: { n: 5 } })).toMatchObject({ status: 200, data: { version: 4 } });
      expect((await uncached.read('data/stale')).data).toMatchObject({ data: { n: 5 }, metadata: { version: 4 } });
    });
  });

  it('keeps concurrent writes without cas as distinct, consecutive versions', async () => {
    const physical = new InmemPhysical();
    const keyring = Keyring.generate();
    const mount = kvMount('2');
    const replicas = [KvHarness.over(physical, keyring, mount), KvHarness.over(physical, keyring, mount)];
    const outcomes = await Promise.all(
      Array.from({ length: WRITERS }, (_, writer) => replicas[writer % 2].write('data/free', { data: { writer } })),
    );
    const versions = outcomes.map((outcome) => (outcome.data as { version: number }).version).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: WRITERS }, (_, i) => i + 1));
  });
});
