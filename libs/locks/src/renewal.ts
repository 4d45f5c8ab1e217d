import { Lock } from './types';

export interface Renewal {
  /** Stops renewing and waits for a renewal already under way. */
  stop(): Promise<void>;
}

/** Renews `lock` every ttl/3, so two renewals can fail before it expires. Gives up once the lock
 * is reported lost: it belongs to someone else by then. */
export function keepRenewed(lock: Lock, ttlMs: number): Renewal {
  const intervalMs = Math.max(1, Math.floor(ttlMs / 3));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> = Promise.resolve();

  const schedule = () => {
    timer = setTimeout(renewNow, intervalMs);
  };
  const renewNow = () => {
    renewing = lock.renew(ttlMs).then(
      (held) => {
        if (held && !stopped) schedule();
      },
      // The store is unreachable for now: keep trying while the TTL still covers us.
      () => {
        if (!stopped) schedule();
      },
    );
  };

  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await renewing;
    },
  };
}
