import { readFileSync } from 'node:fs';
import {
  ConnectionOptions,
  connect,
  credsAuthenticator,
  ErrorCode,
  headers as natsHeaders,
  Msg,
  MsgHdrs,
  NatsConnection,
  NatsError,
  Subscription as NatsSubscription,
} from 'nats';
import { InFlight } from './in-flight';
import { Bus, BusMessage, BusUnavailableError, NatsBusConfig, RequestOptions, Subscription } from './types';
import { answer, DEFAULT_REQUEST_TIMEOUT_MS, notifyListener, readReply, requestTimeout } from './wire';

/** The distributed transport: NATS core request-reply with queue groups. */
export class NatsBus implements Bus {
  readonly kind = 'nats';
  private readonly inFlight = new InFlight();
  /** Our own subscriptions, drained first on close so in-flight handlers can still reply. */
  private readonly subscriptions = new Set<NatsSubscription>();
  private closing?: Promise<void>;
  /** Sends waiting for the end of this event-loop turn (see `sendSoon`). */
  private readonly pendingSends: (() => void)[] = [];

  private constructor(
    private readonly connection: NatsConnection,
    private readonly defaultTimeoutMs: number,
  ) {}

  static async connect(config: NatsBusConfig): Promise<NatsBus> {
    const options = connectionOptions(config);
    const defaultTimeoutMs = requestTimeout(config.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
    try {
      return new NatsBus(await connect(options), defaultTimeoutMs);
    } catch (err) {
      // Only the code: server URLs and messages may embed credentials.
      const reason = err instanceof NatsError ? err.code : 'connection failed';
      throw new Error(`cannot connect to NATS (${config.servers.length} server(s) configured): ${reason}`);
    }
  }

  async request(subject: string, payload: Uint8Array, opts: RequestOptions = {}): Promise<BusMessage> {
    const options = { timeout: requestTimeout(opts.timeoutMs, this.defaultTimeoutMs), headers: toNatsHeaders(opts.headers) };
    let reply: Msg;
    try {
      reply = await new Promise<Msg>((resolve, reject) => this.sendSoon(() => this.connection.request(subject, payload, options).then(resolve, reject)));
    } catch (err) {
      throw toBusError(subject, err);
    }
    return readReply(subject, fromNatsMsg(reply));
  }

  serve(subject: string, queue: string, handler: (msg: BusMessage) => Promise<BusMessage>): Subscription {
    return this.listen(subject, queue, (msg) => {
      void this.inFlight.track(this.respond(msg, handler));
    });
  }

  async publish(subject: string, payload: Uint8Array, headers?: Record<string, string>): Promise<void> {
    try {
      this.connection.publish(subject, payload, { headers: toNatsHeaders(headers) });
    } catch (err) {
      throw toBusError(subject, err);
    }
  }

  subscribe(subject: string, handler: (msg: BusMessage) => void): Subscription {
    return this.listen(subject, undefined, (msg) => notifyListener(handler, fromNatsMsg(msg)));
  }

  async flush(): Promise<void> {
    try {
      await this.connection.flush();
    } catch (err) {
      throw toBusError('(flush)', err);
    }
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await Promise.allSettled([...this.subscriptions].map((sub) => sub.drain()));
    await this.inFlight.settled();
    if (!this.connection.isClosed()) await this.connection.drain();
  }

  private listen(subject: string, queue: string | undefined, onMessage: (msg: Msg) => void): Subscription {
    let sub: NatsSubscription;
    try {
      sub = this.connection.subscribe(subject, {
        queue,
        // Errors here only report the subscription ending (close, permissions); nothing to deliver.
        callback: (err, msg) => {
          if (!err) onMessage(msg);
        },
      });
    } catch (err) {
      throw toBusError(subject, err);
    }
    this.subscriptions.add(sub);
    return {
      unsubscribe: () => {
        if (this.subscriptions.delete(sub)) sub.unsubscribe();
      },
    };
  }

  private async respond(msg: Msg, handler: (msg: BusMessage) => Promise<BusMessage>): Promise<void> {
    const reply = await answer(handler, fromNatsMsg(msg));
    this.sendSoon(() => {
      try {
        msg.respond(reply.payload, { headers: toNatsHeaders(reply.headers) });
      } catch {
        // The connection is gone; the requester sees a timeout, which is the truth.
      }
    });
  }

  /**
   * Runs `send` at the end of this event-loop turn, together with every other send queued in it.
   * nats.js writes what was queued within one microtask checkpoint in one socket write; requests
   * and replies of concurrent HTTP requests arrive in separate callbacks, so without this each
   * message was a write (and a wake-up of the NATS server) of its own.
   */
  private sendSoon(send: () => void): void {
    if (this.pendingSends.push(send) > 1) return;
    setImmediate(() => {
      const sends = this.pendingSends.splice(0);
      for (const queued of sends) queued();
    });
  }
}

function connectionOptions(config: NatsBusConfig): ConnectionOptions {
  if (!Array.isArray(config.servers) || config.servers.length === 0) {
    throw new Error('NATS bus config: "servers" must list at least one server');
  }
  return {
    servers: config.servers,
    name: config.name,
    user: config.user,
    pass: config.password,
    token: config.token,
    authenticator: config.credsFile ? credsAuthenticator(readCredentials(config.credsFile)) : undefined,
    tls: config.tls ? { ...config.tls } : undefined,
    // A service outlives broker restarts: keep reconnecting; requests time out meanwhile.
    maxReconnectAttempts: -1,
    // nats.js otherwise captures three stack traces per request, in case it times out: a tenth
    // of a gateway's time under load. A timeout is reported by subject, which is what matters.
    noAsyncTraces: true,
  };
}

function readCredentials(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`NATS bus config: cannot read credsFile ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
}

function toBusError(subject: string, err: unknown): unknown {
  if (!(err instanceof NatsError)) return err;
  switch (err.code) {
    case ErrorCode.NoResponders:
      return new BusUnavailableError(subject, 'no-responders');
    case ErrorCode.Timeout:
      return new BusUnavailableError(subject, 'timeout');
    case ErrorCode.ConnectionClosed:
    case ErrorCode.ConnectionDraining:
      return new BusUnavailableError(subject, 'closed');
    default:
      return err;
  }
}

function toNatsHeaders(headers: Record<string, string> | undefined): MsgHdrs | undefined {
  const entries = Object.entries(headers ?? {});
  if (entries.length === 0) return undefined;
  const natsMsgHeaders = natsHeaders();
  for (const [key, value] of entries) natsMsgHeaders.set(key, value);
  return natsMsgHeaders;
}

function fromNatsMsg(msg: Msg): BusMessage {
  const headers: Record<string, string> = {};
  for (const [key, values] of msg.headers ?? []) headers[key] = values[0];
  return { payload: msg.data, headers };
}
