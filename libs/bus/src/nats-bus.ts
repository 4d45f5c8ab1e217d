import { readFileSync } from 'node:fs';
import {
  ConnectionOptions,
  connect,
  createInbox,
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
import { MessageAuthenticator, readClusterKey, RejectionLog, ReplayGuard } from './message-auth';
import { Bus, BusLogger, BusMessage, BusUnavailableError, NatsBusConfig, RequestOptions, Subscription } from './types';
import { answer, DEFAULT_REQUEST_TIMEOUT_MS, notifyListener, readReply, requestTimeout } from './wire';

/** A request waiting for its reply on this connection's inbox. */
interface PendingReply {
  subject: string;
  resolve(msg: BusMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** How long closing waits for in-flight work to be answered through the broker. */
const DRAIN_LIMIT_MS = 5_000;

/** The status NATS sends a requester when no subscriber serves the subject. */
const NO_RESPONDERS = 503;

/**
 * The distributed transport: NATS core request-reply with queue groups. Replies come back on one
 * inbox subscription per connection, matched here by request number (nats.js's own request
 * allocates an error with a stack trace per call even when it succeeds). Every message sent is
 * signed with the cluster key and every message received is verified (`message-auth.ts`); what
 * fails is dropped and logged, so a request from outside the cluster gets no answer at all.
 */
export class NatsBus implements Bus {
  readonly kind = 'nats';
  readonly alone = false;
  private readonly inFlight = new InFlight();
  /** Our own subscriptions, drained first on close so in-flight handlers can still reply. */
  private readonly subscriptions = new Set<NatsSubscription>();
  private closing?: Promise<void>;
  /** Sends waiting for the end of this event-loop turn (see `sendSoon`). */
  private readonly pendingSends: (() => void)[] = [];
  private readonly replies = new Map<string, PendingReply>();
  /** This connection's reply subjects start with it (`<inbox prefix>.<random>.`). */
  private readonly inbox: string;
  private lastRequest = 0;
  private linkUp = true;
  private readonly connectionListeners = new Set<(connected: boolean) => void>();
  private readonly replyReplays = new ReplayGuard();
  private readonly rejections: RejectionLog;

  private constructor(
    private readonly connection: NatsConnection,
    private readonly defaultTimeoutMs: number,
    private readonly authenticator: MessageAuthenticator,
    logger: BusLogger | undefined,
    inboxPrefix: string | undefined,
  ) {
    this.inbox = `${createInbox(inboxPrefix)}.`;
    this.rejections = new RejectionLog(logger);
    connection.subscribe(`${this.inbox}*`, { callback: (err, msg) => err || this.onReply(msg) });
    void this.followStatus();
  }

  get connected(): boolean {
    return this.linkUp;
  }

  onConnectionChange(listener: (connected: boolean) => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  /**
   * While the link is down, replies cannot arrive: waiting requests fail at once instead of at their
   * timeout, and new ones are refused rather than queued for a reconnect that may never come.
   */
  private async followStatus(): Promise<void> {
    for await (const status of this.connection.status()) {
      if (status.type !== 'disconnect' && status.type !== 'reconnect') continue;
      this.linkUp = status.type === 'reconnect';
      if (!this.linkUp) this.abandonReplies('disconnected');
      for (const listener of this.connectionListeners) listener(this.linkUp);
    }
  }

  private abandonReplies(reason: BusUnavailableError['reason']): void {
    for (const id of [...this.replies.keys()]) {
      const pending = this.settle(id);
      pending?.reject(new BusUnavailableError(pending.subject, reason));
    }
  }

  /** `logger` hears of refused messages and of a cluster key file others may read. */
  static async connect(config: NatsBusConfig, logger?: BusLogger): Promise<NatsBus> {
    const options = connectionOptions(config);
    const defaultTimeoutMs = requestTimeout(config.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
    const authenticator = new MessageAuthenticator(readClusterKey(config.clusterKeyFile, logger));
    try {
      return new NatsBus(await connect(options), defaultTimeoutMs, authenticator, logger, config.inboxPrefix);
    } catch (err) {
      // Only the code: server URLs and messages may embed credentials.
      const reason = err instanceof NatsError ? err.code : 'connection failed';
      throw new Error(`cannot connect to NATS (${config.servers.length} server(s) configured): ${reason}`);
    }
  }

  async request(subject: string, payload: Uint8Array, opts: RequestOptions = {}): Promise<BusMessage> {
    const timeoutMs = requestTimeout(opts.timeoutMs, this.defaultTimeoutMs);
    const headers = toNatsHeaders(opts.headers);
    if (this.closing || this.connection.isClosed()) throw new BusUnavailableError(subject, 'closed');
    if (!this.linkUp) throw new BusUnavailableError(subject, 'disconnected');
    const id = String(++this.lastRequest);
    const reply = await new Promise<BusMessage>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id)?.reject(new BusUnavailableError(subject, 'timeout')), timeoutMs);
      this.replies.set(id, { subject, resolve, reject, timer });
      this.sendSoon(() => {
        try {
          const reply = this.inbox + id;
          this.connection.publish(subject, this.authenticator.sign(subject, reply, opts.headers, payload), { reply, headers });
        } catch (err) {
          this.settle(id)?.reject(toBusError(subject, err) as Error);
        }
      });
    });
    return readReply(subject, reply);
  }

  private onReply(msg: Msg): void {
    const id = msg.subject.slice(this.inbox.length);
    if (!this.replies.has(id)) return; // timed out already
    // The server's own status: unsigned, and harmless to believe (the request fails).
    if (msg.data.length === 0 && msg.headers?.code === NO_RESPONDERS) {
      const pending = this.settle(id)!;
      pending.reject(new BusUnavailableError(pending.subject, 'no-responders'));
      return;
    }
    // A forged reply is dropped without settling, so the true reply can still arrive.
    const reply = this.authenticated(msg, this.replyReplays);
    if (reply) this.settle(id)!.resolve(reply);
  }

  /** The message with its signature checked and removed; undefined (and logged) when it fails. */
  private authenticated(msg: Msg, replays: ReplayGuard): BusMessage | undefined {
    const headers = fromNatsHeaders(msg.headers);
    const verified = this.authenticator.verify(msg.subject, msg.reply, headers, msg.data, replays);
    if (typeof verified === 'string') {
      this.rejections.note(msg.subject, verified);
      return undefined;
    }
    return { payload: verified, headers };
  }

  /** Takes a pending request out of the table (once: a late reply or timer finds nothing). */
  private settle(id: string): PendingReply | undefined {
    const pending = this.replies.get(id);
    if (!pending) return undefined;
    this.replies.delete(id);
    clearTimeout(pending.timer);
    return pending;
  }

  serve(subject: string, queue: string, handler: (msg: BusMessage) => Promise<BusMessage>): Subscription {
    return this.listen(subject, queue, (msg, request) => {
      void this.inFlight.track(this.respond(msg, request, handler));
    });
  }

  async publish(subject: string, payload: Uint8Array, headers?: Record<string, string>): Promise<void> {
    try {
      this.connection.publish(subject, this.authenticator.sign(subject, undefined, headers, payload), { headers: toNatsHeaders(headers) });
    } catch (err) {
      throw toBusError(subject, err);
    }
  }

  subscribe(subject: string, handler: (msg: BusMessage) => void): Subscription {
    return this.listen(subject, undefined, (_msg, message) => notifyListener(handler, message));
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
    // Draining waits on the broker; with the link down (or lost meanwhile) it would wait forever,
    // and a process asked to stop must stop.
    const drainedInTime = async () => {
      const drained = this.drain().then(
        () => true,
        () => false,
      );
      const gaveUp = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), DRAIN_LIMIT_MS).unref());
      return Promise.race([drained, gaveUp]);
    };
    if (!this.linkUp || !(await drainedInTime())) await this.connection.close();
    this.abandonReplies('closed');
  }

  private async drain(): Promise<void> {
    await Promise.allSettled([...this.subscriptions].map((sub) => sub.drain()));
    await this.inFlight.settled();
    // Replies of the handlers that just finished leave before the connection drains.
    this.sendQueued();
    if (!this.connection.isClosed()) await this.connection.drain();
  }

  /** Subscribes; `onMessage` gets each authentic message, once (a replay is refused). */
  private listen(subject: string, queue: string | undefined, onMessage: (msg: Msg, message: BusMessage) => void): Subscription {
    let sub: NatsSubscription;
    const replays = new ReplayGuard();
    try {
      sub = this.connection.subscribe(subject, {
        queue,
        // Errors here only report the subscription ending (close, permissions); nothing to deliver.
        callback: (err, msg) => {
          if (err) return;
          const message = this.authenticated(msg, replays);
          if (message) onMessage(msg, message);
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

  private async respond(msg: Msg, request: BusMessage, handler: (msg: BusMessage) => Promise<BusMessage>): Promise<void> {
    const reply = await answer(handler, request);
    const to = msg.reply;
    if (!to) return; // published without a reply subject: nobody to answer
    this.sendSoon(() => {
      try {
        msg.respond(this.authenticator.sign(to, undefined, reply.headers, reply.payload), { headers: toNatsHeaders(reply.headers) });
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
    if (this.pendingSends.push(send) === 1) setImmediate(() => this.sendQueued());
  }

  private sendQueued(): void {
    for (const send of this.pendingSends.splice(0)) send();
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
    // nats.js otherwise captures stack traces for its own calls in case they time out.
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

function fromNatsHeaders(natsMsgHeaders: MsgHdrs | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, values] of natsMsgHeaders ?? []) headers[key] = values[0];
  return headers;
}
