import { randomBytes } from 'node:crypto';
import { combineShares, splitKey } from './shamir';

describe('Shamir split/combine', () => {
  it('any threshold-sized subset of the shares rebuilds the key', async () => {
    const key = randomBytes(32);
    const shares = await splitKey(key, 5, 3);
    expect(shares.map((s) => s.length)).toEqual([33, 33, 33, 33, 33]);
    for (const subset of [[0, 1, 2], [4, 2, 0], [1, 3, 4]]) {
      expect(await combineShares(subset.map((i) => shares[i]))).toEqual(key);
    }
    expect(await combineShares([shares[0], shares[1]])).not.toEqual(key);
  });

  it('a single share is the key itself', async () => {
    const key = randomBytes(32);
    const [share] = await splitKey(key, 1, 1);
    expect(share).toEqual(key);
    expect(await combineShares([share])).toEqual(key);
  });
});
