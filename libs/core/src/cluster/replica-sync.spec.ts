import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { ReplicaSync } from './replica-sync';

/** Two replicas on one in-memory bus; the second applies invalidations only when the test lets it. */
async function twoReplicas() {
  const hub = new MemoryBusHub();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const applied: string[][] = [];
  const writer = new ReplicaSync(new MemoryBus({ hub }), 'test', () => true, { apply: async () => undefined, resync: async () => undefined });
  const peer = new ReplicaSync(new MemoryBus({ hub }), 'test', () => true, {
    apply: async (keys) => {
      await released;
      applied.push(keys);
    },
    resync: async () => undefined,
  });
  // Each learns of the other from its heartbeat before its start resolves.
  await Promise.all([writer.start(), peer.start()]);
  return { writer, peer, applied, release, stop: () => [writer, peer].forEach((sync) => sync.stop()) };
}

/** Whether each promise has settled, after the bus has had time to deliver everything it could. */
async function settled(promises: Promise<unknown>[]): Promise<boolean[]> {
  const done = promises.map(() => false);
  promises.forEach((promise, i) => void promise.then(() => (done[i] = true)));
  await new Promise((resolve) => setTimeout(resolve, 50));
  return done;
}

describe('ReplicaSync', () => {
  it('has nothing to propagate on a bus no other replica can be on', async () => {
    const alone = new ReplicaSync(new MemoryBus(), 'test', () => true, { apply: async () => undefined, resync: async () => undefined });
    await alone.start();
    try {
      alone.noteWrite('written');
      expect(alone.hasPending).toBe(false);
      await alone.flush();
    } finally {
      alone.stop();
    }
  });

  it('keeps a request whose change another request is propagating waiting until the peers applied it', async () => {
    const { writer, applied, release, stop } = await twoReplicas();
    try {
      // Two requests wrote; the first to finish propagates both changes.
      writer.noteWrite('first');
      writer.noteWrite('second');
      const first = writer.flush();
      expect(writer.hasPending).toBe(true);
      const second = writer.flush();
      expect(await settled([first, second])).toEqual([false, false]);

      release();
      await Promise.all([first, second]);
      expect(applied).toEqual([['first', 'second']]);
      expect(writer.hasPending).toBe(false);
    } finally {
      stop();
    }
  });

  it('propagates the changes of requests that finish during a propagation together, in the next one', async () => {
    const { writer, applied, release, stop } = await twoReplicas();
    try {
      writer.noteWrite('first');
      const first = writer.flush();
      writer.noteWrite('second');
      const second = writer.flush();
      writer.noteWrite('third');
      const third = writer.flush();
      expect(await settled([first, second, third])).toEqual([false, false, false]);

      release();
      await Promise.all([first, second, third]);
      expect(applied).toEqual([['first'], ['second', 'third']]);
    } finally {
      stop();
    }
  });

  it('knows every peer when its start resolves, so the first write a newcomer serves waits for them', async () => {
    const hub = new MemoryBusHub();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const early = new ReplicaSync(new MemoryBus({ hub }), 'test', () => true, { apply: () => released, resync: async () => undefined });
    await early.start();
    const newcomer = new ReplicaSync(new MemoryBus({ hub }), 'test', () => true, { apply: async () => undefined, resync: async () => undefined });
    await newcomer.start();
    try {
      newcomer.noteWrite('mount table');
      const flushed = newcomer.flush();
      // Waiting for the early replica to apply it, not merely broadcast.
      expect(await settled([flushed])).toEqual([false]);
      release();
      await flushed;
    } finally {
      [early, newcomer].forEach((sync) => sync.stop());
    }
  });

  it('propagates a write no request flushes (background work) on its own', async () => {
    const { writer, applied, release, stop } = await twoReplicas();
    try {
      release();
      writer.noteWrite('written by lease expiry');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(applied).toEqual([['written by lease expiry']]);
    } finally {
      stop();
    }
  });
});
