/** Why a kept renewal ended. */
export type RenewalEnd = Error | 'stopped' | 'max-ttl';

/**
 * Keeps something renewed (a lease, the client's own token): renews when two thirds of the granted
 * TTL have passed, until `stop()`, or until a renewal fails or grants no more time (it reached its
 * max TTL), which `onEnd` hears once. `renew` renews and answers the TTL granted from now, seconds.
 */
export function keepRenewing(renew: () => Promise<number>, ttlSeconds: number, onEnd: (reason: RenewalEnd) => void): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const end = (reason: RenewalEnd) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    onEnd(reason);
  };
  const schedule = (ttl: number) => {
    timer = setTimeout(() => void renewNow(), Math.max(1, (ttl * 1000 * 2) / 3));
    timer.unref();
  };
  const renewNow = async () => {
    try {
      const granted = await renew();
      if (ended) return;
      if (granted <= 0 || granted < ttlSeconds / 10) return end('max-ttl');
      schedule(granted);
    } catch (err) {
      end(err instanceof Error ? err : new Error(String(err)));
    }
  };
  schedule(ttlSeconds);
  return { stop: () => end('stopped') };
}
