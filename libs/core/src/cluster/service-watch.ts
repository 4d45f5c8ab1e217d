import { BusUnavailableError, type Bus } from '@svc/bus';
import { servicePresenceSubject } from '@svc/engine-host';
import { ServiceError } from '@svc/api-contract';

/** How often requests still waiting for a service are looked at, and how old they must be. */
const SWEEP_MS = 1_000;

interface Waiter {
  sentAt: number;
  fail(err: Error): void;
}

/**
 * Engine requests in flight to services over the bus. A request whose service instance dies before
 * answering would wait out the whole bus timeout; instead, requests older than a second are checked
 * on: when no instance of their service is left (the broker has no responder for its presence
 * subject), they fail at once with 503.
 */
export class ServiceWatch {
  private readonly waiting = new Map<string, Set<Waiter>>();
  private sweep?: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly subjectPrefix: string | undefined,
  ) {}

  track<T>(service: string, request: Promise<T>): Promise<T> {
    let waiters = this.waiting.get(service);
    if (!waiters) this.waiting.set(service, (waiters = new Set()));
    this.sweep ??= setInterval(() => void this.checkOnServices(), SWEEP_MS).unref();
    const all = waiters;
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = { sentAt: performance.now(), fail: reject };
      all.add(waiter);
      request.then(
        (value) => {
          all.delete(waiter);
          resolve(value);
        },
        (err: unknown) => {
          all.delete(waiter);
          reject(err as Error);
        },
      );
    });
  }

  stop(): void {
    clearInterval(this.sweep);
    this.sweep = undefined;
  }

  private async checkOnServices(): Promise<void> {
    const overdue = performance.now() - SWEEP_MS;
    await Promise.all(
      [...this.waiting].map(async ([service, waiters]) => {
        if (![...waiters].some((waiter) => waiter.sentAt <= overdue)) return;
        if (await this.isPresent(service)) return;
        const gone = ServiceError.unavailable(`service "${service}" is unavailable (no instance left to answer)`);
        for (const waiter of waiters) waiter.fail(gone);
        waiters.clear();
      }),
    );
  }

  private async isPresent(service: string): Promise<boolean> {
    try {
      await this.bus.request(servicePresenceSubject(service, this.subjectPrefix), new Uint8Array(), { timeoutMs: SWEEP_MS });
      return true;
    } catch (err) {
      // A timeout says nothing (a busy broker or instance); only "no responders" means gone.
      return !(err instanceof BusUnavailableError && err.reason === 'no-responders');
    }
  }
}
