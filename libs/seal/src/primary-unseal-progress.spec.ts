import { randomBytes } from 'node:crypto';
import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { PrimaryUnsealProgress, serveUnsealProgress } from './primary-unseal-progress';
import { UNSEAL_KEY_BYTES, combineShares, splitKey } from './shamir';

describe('unseal progress held by the primary for its workers', () => {
  const hub = new MemoryBusHub();
  const primary = new MemoryBus({ hub });
  const serving = serveUnsealProgress(primary);
  const [first, second] = [new PrimaryUnsealProgress(new MemoryBus({ hub })), new PrimaryUnsealProgress(new MemoryBus({ hub }))];
  const split = { shares: 3, threshold: 2 };

  afterAll(() => serving.unsubscribe());

  test('shares given to different workers count toward one attempt, which the threshold-th completes', async () => {
    const key = randomBytes(UNSEAL_KEY_BYTES);
    const shares = (await splitKey(key, split.shares, split.threshold)).map((share) => share.toString('hex'));
    expect(await first.add(shares[0], split)).toBeUndefined();
    const state = await second.state();
    expect(state).toEqual({ progress: 1, nonce: expect.any(String) });
    await expect(second.add(shares[0], split)).rejects.toThrow('this key share was already submitted in the current unseal attempt');
    const given = await second.add(shares[2], split);
    expect(given).toHaveLength(2);
    expect(await combineShares(given!)).toEqual(key);
    expect(await first.state()).toEqual({ progress: 0, nonce: '' });
  });

  test('a share that is not one is refused with the field named; dropping starts over', async () => {
    await expect(first.add('not a share', split)).rejects.toThrow('key must be a hex or base64 string');
    const [share] = await splitKey(randomBytes(UNSEAL_KEY_BYTES), split.shares, split.threshold);
    await first.add(share.toString('hex'), split);
    await second.drop();
    expect(await first.state()).toEqual({ progress: 0, nonce: '' });
  });
});
