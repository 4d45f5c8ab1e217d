import { withinDeadline } from './outbound';

/** A call that ends only when its signal aborts, with the SDK-like error of a cancellation. */
const untilAborted = (signal: AbortSignal) => new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error('The operation was aborted'))));

describe('withinDeadline', () => {
  it('throws what the caller names when the deadline cuts the call off, even for a fraction of a millisecond', async () => {
    await expect(withinDeadline(20.5, untilAborted, () => new Error('no answer within 20 ms'))).rejects.toThrow('no answer within 20 ms');
  });

  it("passes through an answer, and the call's own error when it is stopped rather than timed out", async () => {
    await expect(withinDeadline(1_000, async () => 'answered', () => new Error('late'))).resolves.toBe('answered');
    const stop = new AbortController();
    const stopped = withinDeadline(10_000, untilAborted, () => new Error('late'), stop.signal);
    stop.abort();
    await expect(stopped).rejects.toThrow('The operation was aborted');
  });
});
