import { STORE_BACKENDS, storePerTest, type StoreFixture } from '@svc/testing';
import { ReadStamp } from './types';

const bytes = (text: string) => Buffer.from(text, 'utf8');
const withFeed = STORE_BACKENDS.find((backend) => backend.name === 'postgresql with a feed shared by workers')!;

describe('PostgreSQL with a change feed shared by workers (FeedRecordingPhysical)', () => {
  let fixture: StoreFixture;
  storePerTest(withFeed, (each) => (fixture = each));

  it("tells each process the keys the others wrote, once they are committed, and not its own", async () => {
    const { store, peer } = fixture;
    expect(store.changes!.poll()).toBeUndefined();
    await store.put('own', bytes('1'));
    expect(store.changes!.poll()).toBeUndefined();
    await peer.put('a/one', bytes('1'));
    await peer.transaction(async (tx) => {
      await tx.put('a/two', bytes('2'));
      await tx.delete('a/one');
    });
    await peer.delete('a/two');
    await peer.writeIfUnchanged({ locks: ['c'], unchanged: new Map([['c', ReadStamp.ABSENT]]), writes: new Map([['c', bytes('3')]]) });
    // A conditional write that did not go through changed nothing.
    await peer.writeIfUnchanged({ locks: ['c'], unchanged: new Map([['c', ReadStamp.ABSENT]]), writes: new Map([['c', bytes('4')]]) });
    await peer.changes!.note(['sys/peer-unsealed']);
    expect(store.changes!.poll()).toEqual(['a/one', 'a/two', 'a/one', 'a/two', 'c', 'sys/peer-unsealed']);
    expect(await store.get('c')).toEqual(bytes('3'));
    expect(store.changes!.poll()).toBeUndefined();
    expect(peer.changes!.poll()).toEqual(['own']);
  });

  it('puts nothing on the feed for a transaction that failed', async () => {
    const { store, peer } = fixture;
    await expect(
      peer.transaction(async (tx) => {
        await tx.put('never', bytes('1'));
        throw new Error('changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(store.changes!.poll()).toBeUndefined();
    expect(await store.get('never')).toBeNull();
  });
});
