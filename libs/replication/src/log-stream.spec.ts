import { KeyClassifier, lastRemoteWal, MerkleIndex, ReplicationLog } from '@svc/replication-log';
import { InmemPhysical } from '@svc/storage';
import { eventually } from '@svc/testing';
import { LogFollower } from './log-follower';
import { LINK_PATHS } from './wal-wire';
import { DR_SCOPE, LogShipper, performanceScope, type SecondaryScope } from './log-shipper';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const KEY_TERM = 1;

/** A primary store with its shipper, and a secondary store following it through the shipper's answers (as JSON, the wire's form). */
async function pair(scope: SecondaryScope, limits = { maxEntries: 1000, maxBytes: 1 << 20 }, before: (primary: InmemPhysical) => Promise<void> = async () => {}) {
  const primary = new InmemPhysical();
  const secondary = new InmemPhysical();
  const classifier = new KeyClassifier();
  const log = await ReplicationLog.open(primary, classifier, limits);
  await before(primary);
  const shipper = new LogShipper(primary, log, classifier, () => ['local-uuid'], (err) => {
    throw err;
  });
  const index = await MerkleIndex.open(secondary, new KeyClassifier());
  /** What the secondary receives, as the primary reads it for each call (a paths filter may change). */
  const scoped = { current: scope, walReads: 0 };
  const changed: (string[] | undefined)[] = [];
  const infos: string[] = [];
  const follower = new LogFollower({
    physical: secondary,
    index,
    trees: scope.trees,
    call: async (path, body) => {
      if (path === LINK_PATHS.wal) scoped.walReads++;
      return JSON.parse(JSON.stringify(await shipper.answer(path, JSON.parse(JSON.stringify(body)), async () => scoped.current, KEY_TERM)));
    },
    ensureKeyring: async (term) => expect(term).toBe(KEY_TERM),
    changed: async (keys) => void changed.push(keys),
    logger: { info: (_obj, msg) => void infos.push(msg), warn: (obj, msg) => void infos.push(`${msg} ${JSON.stringify(obj)}`) },
  });
  const stop = async () => {
    await follower.stop();
    shipper.stop();
  };
  return { primary, secondary, log, follower, index, changed, infos, stop, scoped };
}

describe('LogShipper and LogFollower', () => {
  it('stream writes and deletions to a DR secondary, which waits for an index it has applied', async () => {
    const { primary, secondary, follower, changed, stop } = await pair(DR_SCOPE);
    try {
      await primary.put('core/mounts', bytes('table'));
      await primary.put('logical/kv-uuid/a', bytes('1'));
      await primary.put('sys/token/id/t', bytes('token'));
      await primary.delete('logical/kv-uuid/a');
      await primary.put('core/keyring', bytes('the primary seal entry'));
      const last = await primary.log.lastIndex();
      expect(await follower.waitForRemoteIndex(last, 10_000)).toBe(true);
      expect(await secondary.get('core/mounts')).toEqual(bytes('table'));
      expect(await secondary.get('sys/token/id/t')).toEqual(bytes('token'));
      expect(await secondary.get('logical/kv-uuid/a')).toBeNull();
      // The seal's entries belong to the cluster that wrote them.
      expect(await secondary.get('core/keyring')).toBeNull();
      expect(await lastRemoteWal(secondary)).toBe(last);
      await eventually(async () => follower.state === 'stream-wals', 10_000);
      expect(changed.flat()).toEqual(expect.arrayContaining(['core/mounts', 'sys/token/id/t']));
      expect(await follower.waitForRemoteIndex(last + 100, 50)).toBe(false);
    } finally {
      await stop();
    }
  });

  it('ship a performance secondary replicated keys only, less what its filter excludes', async () => {
    const { primary, secondary, follower, stop } = await pair(performanceScope(['logical/denied-uuid/']));
    try {
      await primary.put('logical/kv-uuid/a', bytes('1'));
      await primary.put('logical/denied-uuid/a', bytes('filtered'));
      await primary.put('logical/local-uuid/a', bytes('local mount'));
      await primary.put('sys/token/id/t', bytes('token'));
      await primary.put('logical/kv-uuid/b', bytes('2'));
      const last = await primary.log.lastIndex();
      expect(await follower.waitForRemoteIndex(last, 10_000)).toBe(true);
      expect(await secondary.get('logical/kv-uuid/b')).toEqual(bytes('2'));
      for (const key of ['logical/denied-uuid/a', 'logical/local-uuid/a', 'sys/token/id/t']) expect([key, await secondary.get(key)]).toEqual([key, null]);
    } finally {
      await stop();
    }
  });

  it('ship an entry written after a filter change by the new filter, though the read waiting for it began before', async () => {
    const { primary, secondary, follower, stop, scoped } = await pair(performanceScope([]));
    try {
      await primary.put('logical/kv-uuid/a', bytes('1'));
      expect(await follower.waitForRemoteIndex(await primary.log.lastIndex(), 10_000)).toBe(true);
      // Once the follower's next read is waiting on the primary, the filter changes.
      const reads = scoped.walReads;
      await eventually(async () => scoped.walReads > reads);
      scoped.current = performanceScope(['logical/denied-uuid/']);
      await primary.put('logical/denied-uuid/a', bytes('filtered'));
      await primary.put('logical/kv-uuid/b', bytes('2'));
      expect(await follower.waitForRemoteIndex(await primary.log.lastIndex(), 10_000)).toBe(true);
      expect(await secondary.get('logical/kv-uuid/b')).toEqual(bytes('2'));
      expect(await secondary.get('logical/denied-uuid/a')).toBeNull();
    } finally {
      await stop();
    }
  });

  it('resynchronize a secondary behind the buffer by Merkle diff and sync, then stream again', async () => {
    const { primary, secondary, log, index, follower, infos, changed, stop } = await pair(DR_SCOPE, { maxEntries: 5, maxBytes: 1 << 20 }, async (store) => {
      for (let i = 0; i < 30; i++) await store.put(`logical/kv-uuid/k${i}`, bytes(`v${i}`));
    });
    try {
      await eventually(async () => infos.includes('replication resynchronized by merkle diff and sync'), 20_000);
      expect(changed).toContain(undefined);
      await primary.put('logical/kv-uuid/after', bytes('streamed'));
      expect(await follower.waitForRemoteIndex(await primary.log.lastIndex(), 10_000)).toBe(true);
      expect(await secondary.get('logical/kv-uuid/k0')).toEqual(bytes('v0'));
      expect(await secondary.get('logical/kv-uuid/after')).toEqual(bytes('streamed'));
      await log.index.catchUp();
      expect(index.tree('replicated').rootHash()).toBe(log.merkleRoot());
      await eventually(async () => follower.state === 'stream-wals', 10_000);
    } finally {
      await stop();
    }
  });
});
