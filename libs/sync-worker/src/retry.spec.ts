import { retryDelayMs } from './worker';

describe('retry backoff', () => {
  it('doubles from half a second up to a minute, with full jitter', () => {
    expect([1, 2, 3].map((attempts) => retryDelayMs(attempts, () => 1))).toEqual([1_000, 2_000, 4_000]);
    expect(retryDelayMs(30, () => 1)).toBe(60_000);
    expect(retryDelayMs(5, () => 0)).toBe(0);
  });
});
