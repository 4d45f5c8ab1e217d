import { InmemPhysical, type Physical, type WalEntry } from '@svc/storage';
import { STORE_BACKENDS, type StoreFixture } from '@svc/testing';
import {
  answerBucketHashes,
  answerBucketKeys,
  answerEntries,
  answerPageHashes,
  applyBatch,
  diffAndSync,
  differingBuckets,
  differingPages,
  KeyClassifier,
  lastRemoteWal,
  MerkleIndex,
  type MerkleRemote,
  positionOf,
  ReplicationLog,
  ResyncRequiredError,
  ShipperBuffer,
} from './index';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/** The primary's answers called directly: the transport is not under test here. */
function directRemote(physical: Physical, index: MerkleIndex): MerkleRemote {
  return {
    pageHashes: (tree) => answerPageHashes(index, tree),
    bucketHashes: async (tree, pages) => answerBucketHashes(index, tree, pages),
    bucketKeys: async (tree, buckets) => answerBucketKeys(index, tree, buckets),
    entries: (keys) => answerEntries(physical, keys),
  };
}

async function contentOf(physical: Physical): Promise<Map<string, string>> {
  return physical.scan(async (entries) => {
    const content = new Map<string, string>();
    for await (const { key, value } of entries) content.set(key, value.toString('hex'));
    return content;
  });
}

describe('KeyClassifier', () => {
  it('keeps tokens, leases, cluster state and local mounts local, and replicates the rest', () => {
    const classifier = new KeyClassifier();
    classifier.setLocalMounts(['local-uuid', 'cubbyhole-uuid']);
    for (const key of ['sys/token/id/h', 'sys/expire/id/kv/x', 'core/cluster/id', 'core/replication/state', 'core/snapshot-auto/config/daily', 'logical/local-uuid/data/x', 'logical/cubbyhole-uuid/acc/y', 'core/local-mounts', 'core/local-auth', 'namespaces/ns1/core/local-mounts']) {
      expect([key, classifier.classify(key)]).toEqual([key, 'local']);
    }
    for (const key of ['core/mounts', 'core/keyring', 'sys/policy/admin', 'logical/kv-uuid/data/x', 'logical/local-uuid', 'namespaces/ns1/core/mounts', 'sys/tokenizer', 'core/local-mounts-backup', 'namespaces/ns1/sub/core/local-auth']) {
      expect([key, classifier.classify(key)]).toEqual([key, 'replicated']);
    }
  });
});

describe('ShipperBuffer', () => {
  const entry = (idx: number, size = 0): WalEntry => ({ idx, op: 'put', key: `k${idx}`, value: Buffer.alloc(size) });

  it('serves entries after a reader and says when the reader has fallen behind it', () => {
    const buffer = new ShipperBuffer({ maxEntries: 3, maxBytes: 1 << 20 }, 10);
    expect(buffer.read(10, 5)).toEqual({ behind: false, entries: [] });
    expect(buffer.read(9, 5)).toEqual({ behind: true, oldestIndex: 11 });
    buffer.append([entry(11), entry(12), entry(13), entry(14)]);
    expect(buffer.read(11, 5)).toMatchObject({ behind: false, entries: [{ idx: 12 }, { idx: 13 }, { idx: 14 }] });
    expect(buffer.read(12, 1)).toMatchObject({ behind: false, entries: [{ idx: 13 }] });
    expect(buffer.read(10, 5)).toEqual({ behind: true, oldestIndex: 12 });
    // A reader claiming entries this log never had has diverged.
    expect(buffer.read(15, 5)).toEqual({ behind: true, oldestIndex: 12 });
    expect(() => buffer.append([entry(16)])).toThrow('expected log entry 15, got 16');
  });

  it('drops the oldest entries beyond its size in bytes, keeping the newest one', () => {
    const buffer = new ShipperBuffer({ maxEntries: 100, maxBytes: 3000 }, 0);
    buffer.append([entry(1, 1000), entry(2, 1000), entry(3, 1000)]);
    expect(buffer.read(0, 5)).toEqual({ behind: true, oldestIndex: 2 });
    buffer.append([entry(4, 10_000)]);
    expect(buffer.read(3, 5)).toMatchObject({ behind: false, entries: [{ idx: 4 }] });
    expect(buffer.read(2, 5)).toEqual({ behind: true, oldestIndex: 4 });
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new ShipperBuffer({ maxEntries: 0, maxBytes: 10 }, 0)).toThrow('maxEntries must be a positive integer');
    expect(() => new ShipperBuffer({ maxEntries: 10, maxBytes: 1.5 }, 0)).toThrow('maxBytes must be a positive integer');
  });
});

describe.each(STORE_BACKENDS)('replication storage on $name', (backend) => {
  let fixture: StoreFixture;
  let store: Physical;
  const classifier = new KeyClassifier();
  classifier.setLocalMounts(['local-mount']);

  beforeAll(() => backend.beforeAll(), 60_000);
  afterAll(() => backend.afterAll());
  beforeEach(async () => {
    fixture = await backend.setUp();
    store = fixture.store;
  }, 30_000);
  afterEach(() => fixture.tearDown());

  async function fill(physical: Physical, count: number, prefix = 'logical/kv/'): Promise<void> {
    await physical.transaction(async (tx) => {
      for (let i = 0; i < count; i++) await tx.put(`${prefix}${i}`, bytes(`value ${i}`));
    });
  }

  it('has equal roots for equal content, follows writes of another handle, and finds the differing page and bucket', async () => {
    const other = new InmemPhysical();
    await fill(store, 200);
    await fill(other, 200);
    await store.put('sys/token/id/mine', bytes('local'));
    const index = await MerkleIndex.open(store, classifier);
    const otherIndex = await MerkleIndex.open(other, classifier);
    expect(index.tree('replicated').rootHash()).toBe(otherIndex.tree('replicated').rootHash());
    expect(index.tree('local').rootHash()).not.toBe(otherIndex.tree('local').rootHash());

    await fixture.peer.put('logical/kv/7', bytes('changed'));
    await index.catchUp();
    expect(index.lastIndex).toBe(await store.log.lastIndex());
    const { page, subpage } = positionOf('logical/kv/7');
    const theirs = await answerPageHashes(otherIndex, 'replicated');
    expect(differingPages(index, 'replicated', theirs.pages)).toEqual([page]);
    expect(differingBuckets(index, 'replicated', answerBucketHashes(otherIndex, 'replicated', [page]))).toEqual([{ page, subpage }]);
    expect(() => answerBucketHashes(otherIndex, 'replicated', [256])).toThrow('page 256 is not an integer from 0 to 255');
  });

  it('moves the keys of a mount to the local tree once it is known to be local, whenever that is learnt', async () => {
    const own = new KeyClassifier();
    const index = await MerkleIndex.open(store, own);
    // A secondary applies a new mount's entry and its first keys in one batch, before it knows the mount is local.
    await fill(store, 20, 'logical/new-mount/');
    await fill(store, 5, 'logical/kv/');
    await index.catchUp();
    const reference = await MerkleIndex.open(new InmemPhysical(), own);
    expect(index.tree('local').rootHash()).toBe(reference.tree('local').rootHash());

    own.setLocalMounts(['new-mount']);
    await index.catchUp();
    const expected = new InmemPhysical();
    await fill(expected, 20, 'logical/new-mount/');
    await fill(expected, 5, 'logical/kv/');
    const expectedIndex = await MerkleIndex.open(expected, own);
    for (const tree of ['replicated', 'local'] as const) expect(index.tree(tree).rootHash()).toBe(expectedIndex.tree(tree).rootHash());
    expect(index.tree('local').get('logical/new-mount/3')).toBeDefined();
    expect(index.tree('replicated').get('logical/new-mount/3')).toBeUndefined();
  });

  it('makes a secondary equal to its primary by Merkle diff and sync, in the trees asked for', async () => {
    const primary = new InmemPhysical();
    await fill(primary, 300);
    await primary.put('sys/token/id/primary', bytes('primary token'));
    const primaryIndex = await MerkleIndex.open(primary, classifier);
    // The secondary has some keys right, some stale, some the primary never had, and tokens of its own.
    await fill(store, 150);
    await store.put('logical/kv/3', bytes('stale'));
    await store.put('logical/gone/x', bytes('removed on the primary'));
    await store.put('sys/token/id/secondary', bytes('secondary token'));
    const index = await MerkleIndex.open(store, classifier);

    const result = await diffAndSync(store, index, directRemote(primary, primaryIndex), ['replicated']);
    expect(index.tree('replicated').rootHash()).toBe(primaryIndex.tree('replicated').rootHash());
    expect(result).toMatchObject({ fetched: 151, removed: 1, lastRemoteIndex: await primary.log.lastIndex() });
    expect(await store.get('sys/token/id/secondary')).toEqual(bytes('secondary token'));
    expect(await store.get('sys/token/id/primary')).toBeNull();
    expect(await lastRemoteWal(store)).toBe(result.lastRemoteIndex);

    // A DR secondary takes the local tree too.
    await diffAndSync(store, index, directRemote(primary, primaryIndex), ['replicated', 'local']);
    expect(await contentOf(store)).toEqual(await contentOf(primary));
  });

  it('applies a batch of log entries atomically, skips entries already applied and refuses a gap', async () => {
    const primary = new InmemPhysical();
    const primaryIndex = await MerkleIndex.open(primary, classifier);
    await primary.put('logical/kv/a', bytes('1'));
    await primary.transaction(async (tx) => {
      await tx.put('logical/kv/b', bytes('2'));
      await tx.put('logical/kv/a', bytes('3'));
    });
    await primary.delete('logical/kv/b');
    const entries = (await primary.log.entriesAfter(0, 100)).filter((entry) => entry.op !== 'reset');
    const index = await MerkleIndex.open(store, classifier);
    // The primary's reset entry (logging switched on) is index 1: the secondary starts after it.
    await store.transaction((tx) => tx.putMeta('replication/last-remote-wal', bytes('1')));

    await expect(applyBatch(store, index, [entries[0], entries[2]])).rejects.toThrow(ResyncRequiredError);
    expect(await store.get('logical/kv/a')).toBeNull();
    expect(await lastRemoteWal(store)).toBe(1);

    expect(await applyBatch(store, index, entries.slice(0, 2))).toBe(3);
    expect(await applyBatch(store, index, entries)).toBe(5);
    expect(await store.get('logical/kv/a')).toEqual(bytes('3'));
    expect(await store.get('logical/kv/b')).toBeNull();
    expect(await lastRemoteWal(store)).toBe(5);
    await primaryIndex.catchUp();
    expect(index.tree('replicated').rootHash()).toBe(primaryIndex.tree('replicated').rootHash());
    await expect(applyBatch(store, index, [{ idx: 6, op: 'reset', key: '', value: null }])).rejects.toThrow('resets the primary');
  });

  it('reports a corrupted stored page and sub-page in merkle-check, and reindex mends it', async () => {
    await fill(store, 100);
    await fill(store, 5, 'logical/local-mount/');
    const log = await ReplicationLog.open(store, classifier, { maxEntries: 10, maxBytes: 1 << 20 });
    await log.poll();
    const clean = await log.merkleCheck();
    expect(clean).toMatchObject({
      corrupted_root: false,
      corrupted_tree_map: {
        '1': { corrupted_subtree_root: false, tree_type: 'replicated', corrupted_index_tuples_map: null, root_hash: log.merkleRoot() },
        '2': { corrupted_subtree_root: false, tree_type: 'local', corrupted_index_tuples_map: null },
      },
    });
    expect(await log.index.lastCheck()).toEqual({ corrupted: false, epoch: clean.last_corruption_check_epoch });

    // Change one value hash in the stored page holding logical/kv/42.
    const { page, subpage } = positionOf('logical/kv/42');
    const name = `merkle/replicated/page/${String(page).padStart(3, '0')}`;
    const stored = JSON.parse((await store.log.getMeta(name))!.toString()) as [string, string][];
    const corrupted = stored.map(([key, hash]) => [key, key === 'logical/kv/42' ? '0'.repeat(64) : hash]);
    await store.transaction((tx) => tx.putMeta(name, bytes(JSON.stringify(corrupted))));

    const report = await log.merkleCheck();
    expect(report.corrupted_root).toBe(false);
    expect(report.corrupted_tree_map['1']).toMatchObject({ corrupted_subtree_root: true, corrupted_index_tuples_map: { [String(page)]: { corrupted: true, subpages: [subpage] } } });
    expect(report.corrupted_tree_map['2'].corrupted_index_tuples_map).toBeNull();
    expect((await log.index.lastCheck())!.corrupted).toBe(true);

    expect(await log.reindex({ diff: true })).toEqual([
      'reindex: 1 page(s) of the replicated tree differed from storage and were rebuilt',
      'reindex: 1 key(s) of the replicated tree differed from storage',
    ]);
    expect((await log.merkleCheck()).corrupted_tree_map['1']).toMatchObject({ corrupted_subtree_root: false, corrupted_index_tuples_map: null });
  });

  it('reopens from the flushed index and the log written since, trims the log it no longer needs, and keeps the shipper buffer', async () => {
    await fill(store, 20);
    const log = await ReplicationLog.open(store, classifier, { maxEntries: 4, maxBytes: 1 << 20 });
    for (let i = 0; i < 6; i++) await store.put(`logical/kv/n${i}`, bytes(String(i)));
    await store.put('logical/local-mount/x', bytes('local'));
    await log.poll();
    // Index 1 is the reset entry of logging switched on; the 20 earlier writes were not logged.
    expect(await log.lastIndex()).toBe(8);
    // Kept: what the buffer holds (4 entries); earlier ones are trimmed from the table.
    expect((await store.log.entriesAfter(0, 100)).map(({ idx }) => idx)).toEqual([5, 6, 7, 8]);
    expect(log.read(3, 10)).toEqual({ behind: true, oldestIndex: 5 });
    const read = log.read(6, 10);
    expect(read).toMatchObject({ behind: false, entries: [{ idx: 7, key: 'logical/kv/n5', class: 'replicated' }, { idx: 8, key: 'logical/local-mount/x', class: 'local' }] });
    expect((await log.entriesAfter(7, 10)).map((entry) => entry.class)).toEqual(['local']);

    await store.put('logical/kv/after-flush', bytes('x'));
    const reopened = await ReplicationLog.open(store, classifier, { maxEntries: 4, maxBytes: 1 << 20 });
    await log.index.catchUp();
    expect(reopened.merkleRoot()).toBe(log.merkleRoot());
    expect(reopened.index.lastIndex).toBe(9);
    expect(reopened.read(5, 10)).toMatchObject({ behind: false, entries: [{ idx: 6 }, { idx: 7 }, { idx: 8 }, { idx: 9 }] });

    // A restore (a reset entry) makes the index rebuild from storage.
    async function* restored() {
      yield { key: 'logical/kv/only', value: bytes('restored') };
    }
    await store.replaceAll(restored(), new Set());
    await reopened.poll();
    const expected = new InmemPhysical();
    await expected.put('logical/kv/only', bytes('restored'));
    expect(reopened.merkleRoot()).toBe((await MerkleIndex.open(expected, classifier)).tree('replicated').rootHash());
  });
});
