import { ConditionalWriteQueue } from './conditional-write-queue';
import type { ConditionalWrite } from '../types';

const write = (lock: string): ConditionalWrite => ({ locks: [lock], unchanged: new Map(), writes: new Map() });
const lockOf = (written: ConditionalWrite) => written.locks[0];

/** Senders that record what they were given and answer when told to. */
function senders() {
  const sent: string[][] = [];
  const pending: { settle(error?: unknown): void }[] = [];
  const answer = <T>(locks: string[], result: T) =>
    new Promise<T>((resolve, reject) => {
      sent.push(locks);
      pending.push({ settle: (error) => (error === undefined ? resolve(result) : reject(error)) });
    });
  return {
    sent,
    settleNext: async (error?: unknown) => {
      pending.shift()!.settle(error);
      // Let the queue's continuations run: the next batch goes out on them.
      await new Promise((resolve) => setImmediate(resolve));
    },
    send: {
      one: (written: ConditionalWrite) => answer([lockOf(written)], lockOf(written) !== 'refused'),
      many: (writes: ConditionalWrite[]) => answer(writes.map(lockOf), writes.map((written) => lockOf(written) !== 'refused')),
    },
  };
}

describe('ConditionalWriteQueue', () => {
  it('sends a write at once while none is under way', async () => {
    const { sent, settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    const first = queue.add(write('a'));
    expect(sent).toEqual([['a']]);
    await settleNext();
    await expect(first).resolves.toBe(true);
    const second = queue.add(write('b'));
    expect(sent).toEqual([['a'], ['b']]);
    await settleNext();
    await expect(second).resolves.toBe(true);
  });

  it('sends the writes that arrive while it is busy together, in the order of their first locks, and answers each', async () => {
    const { sent, settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    const answers = ['first', 'c', 'refused', 'a', 'b'].map((lock) => queue.add(write(lock)));
    expect(sent).toEqual([['first']]);
    await settleNext();
    expect(sent).toEqual([['first'], ['a', 'b', 'c', 'refused']]);
    await settleNext();
    await expect(Promise.all(answers)).resolves.toEqual([true, true, false, true, true]);
  });

  it('sends at most 32 writes together', async () => {
    const { sent, settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    const answers = Array.from({ length: 41 }, (_, i) => queue.add(write(`k${String(i).padStart(2, '0')}`)));
    await settleNext();
    expect(sent.map((locks) => locks.length)).toEqual([1, 32]);
    await settleNext();
    expect(sent.map((locks) => locks.length)).toEqual([1, 32, 8]);
    await settleNext();
    await expect(Promise.all(answers)).resolves.toEqual(answers.map(() => true));
  });

  it('sends fewer writes together when they carry many keys, so that a statement stays within its parameters', async () => {
    const { sent, settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    // 4 parameters per written key: 2,000 keys are 8,000 parameters; two such writes fit in a batch, a third does not.
    const large = (lock: string): ConditionalWrite => ({ ...write(lock), writes: new Map(Array.from({ length: 2000 }, (_, i) => [`${lock}/${i}`, null])) });
    const answers = [write('first'), large('a'), large('b'), large('c'), write('d')].map((written) => queue.add(written));
    await settleNext();
    expect(sent).toEqual([['first'], ['a', 'b']]);
    await settleNext();
    expect(sent).toEqual([['first'], ['a', 'b'], ['c', 'd']]);
    await settleNext();
    await expect(Promise.all(answers)).resolves.toEqual(answers.map(() => true));
  });

  it('sends the writes of a batch the database ended to break a deadlock one by one', async () => {
    const { sent, settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    const answers = ['first', 'b', 'refused'].map((lock) => queue.add(write(lock)));
    await settleNext();
    await settleNext(Object.assign(new Error('deadlock detected'), { code: '40P01' }));
    expect(sent.slice(2)).toEqual([['b'], ['refused']]);
    await settleNext();
    await settleNext();
    await expect(Promise.all(answers)).resolves.toEqual([true, true, false]);
  });

  it('fails every write of a batch with the error the batch failed with', async () => {
    const { settleNext, send } = senders();
    const queue = new ConditionalWriteQueue(send);
    const first = queue.add(write('first'));
    const batched = ['a', 'b'].map((lock) => queue.add(write(lock)).catch((error: Error) => error.message));
    await settleNext();
    await settleNext(new Error('connection lost'));
    await expect(first).resolves.toBe(true);
    await expect(Promise.all(batched)).resolves.toEqual(['connection lost', 'connection lost']);
  });
});
