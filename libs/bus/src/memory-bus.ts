import { InFlight } from './in-flight';
import { BusHub, Endpoint, MemoryBusHub } from './memory-hub';
import { Bus, BusMessage, BusUnavailableError, RequestOptions, Subscription } from './types';
import { answer, DEFAULT_REQUEST_TIMEOUT_MS, notifyListener, readReply, requestTimeout } from './wire';

export interface MemoryBusOptions {
  /**
   * Share a hub to let several buses talk (replicas in one process, or the workers of one server
   * through the primary's hub); default: a private hub.
   */
  hub?: BusHub;
  requestTimeoutMs?: number;
}

/** The all-in-one transport: the NATS contract within one process. */
export class MemoryBus implements Bus {
  readonly kind = 'memory';
  readonly alone: boolean;
  /** In one process there is no link to lose. */
  readonly connected = true;
  private readonly hub: BusHub;
  private readonly defaultTimeoutMs: number;
  private readonly inFlight = new InFlight();
  private readonly endpointRemovers = new Set<() => void>();
  /** Rejects the requests still waiting when the bus closes. */
  private readonly abandonOnClose = new Set<() => void>();
  private closing?: Promise<void>;

  constructor(options: MemoryBusOptions = {}) {
    this.alone = options.hub === undefined;
    this.hub = options.hub ?? new MemoryBusHub();
    this.defaultTimeoutMs = requestTimeout(options.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
  }

  async request(subject: string, payload: Uint8Array, opts: RequestOptions = {}): Promise<BusMessage> {
    const timeoutMs = requestTimeout(opts.timeoutMs, this.defaultTimeoutMs);
    this.assertOpen(subject);
    return new Promise<BusMessage>((resolve, reject) => {
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.abandonOnClose.delete(abandon);
        outcome();
      };
      const fail = (reason: BusUnavailableError['reason']) => () => reject(new BusUnavailableError(subject, reason));
      const abandon = () => settle(fail('closed'));
      const timer = setTimeout(() => settle(fail('timeout')), timeoutMs);
      this.abandonOnClose.add(abandon);

      try {
        this.hub.dispatch(
          subject,
          { payload, headers: opts.headers ?? {} },
          (reply) =>
            settle(() => {
              try {
                resolve(readReply(subject, reply));
              } catch (err) {
                reject(err);
              }
            }),
          () => settle(fail('no-responders')),
        );
      } catch (err) {
        settle(() => reject(err));
      }
    });
  }

  serve(subject: string, queue: string, handler: (msg: BusMessage) => Promise<BusMessage>): Subscription {
    return this.listen({
      pattern: subject,
      queue,
      deliver: (msg, reply) => {
        void this.inFlight.track(answer(handler, msg).then((result) => reply?.(result)));
      },
    });
  }

  async publish(subject: string, payload: Uint8Array, headers: Record<string, string> = {}): Promise<void> {
    this.assertOpen(subject);
    this.hub.dispatch(subject, { payload, headers });
  }

  subscribe(subject: string, handler: (msg: BusMessage) => void): Subscription {
    return this.listen({ pattern: subject, deliver: (msg) => notifyListener(handler, msg) });
  }

  onConnectionChange(): () => void {
    return () => undefined;
  }

  flush(): Promise<void> {
    return this.hub.flush();
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    for (const remove of this.endpointRemovers) remove();
    this.endpointRemovers.clear();
    await this.inFlight.settled();
    for (const abandon of [...this.abandonOnClose]) abandon();
  }

  private listen(endpoint: Endpoint): Subscription {
    this.assertOpen(endpoint.pattern);
    const remove = this.hub.add(endpoint);
    this.endpointRemovers.add(remove);
    return {
      unsubscribe: () => {
        remove();
        this.endpointRemovers.delete(remove);
      },
    };
  }

  private assertOpen(subject: string): void {
    if (this.closing) throw new BusUnavailableError(subject, 'closed');
  }
}
