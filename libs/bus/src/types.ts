/**
 * The message bus between the gateway and the engine services. Two transports with one contract:
 * NATS (distributed) and in-memory (all-in-one). Payloads are bytes; callers encode JSON.
 */

export interface BusMessage {
  payload: Uint8Array;
  headers: Record<string, string>;
}

export interface RequestOptions {
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/** Thrown by `request` when no service answers (no responders) or it does not answer in time. */
export class BusUnavailableError extends Error {
  constructor(
    readonly subject: string,
    readonly reason: 'no-responders' | 'timeout' | 'closed' | 'disconnected',
  ) {
    super(`no answer on ${subject}: ${reason}`);
    this.name = 'BusUnavailableError';
  }
}

/** Thrown by `request` when the serving handler failed; carries the handler's error message. */
export class BusHandlerError extends Error {
  constructor(
    readonly subject: string,
    message: string,
  ) {
    super(message);
    this.name = 'BusHandlerError';
  }
}

export interface Subscription {
  unsubscribe(): void;
}

export interface Bus {
  readonly kind: 'nats' | 'memory';
  /**
   * No other connection can hear this bus: an in-memory bus on a hub of its own, whose every
   * subscriber is in this process on this very object (one process, one replica). What is
   * broadcast only for other replicas need not be sent on it.
   */
  readonly alone: boolean;
  /** Request-reply; one member of the subject's queue group answers. */
  request(subject: string, payload: Uint8Array, opts?: RequestOptions): Promise<BusMessage>;
  /** Serve a subject within a queue group (load-balanced across replicas). The handler's
   * return value is the reply; a throw replies with an error the requester sees as a rejection. */
  serve(subject: string, queue: string, handler: (msg: BusMessage) => Promise<BusMessage>): Subscription;
  /** Broadcast to every subscriber (cache invalidation, keyring announcements). */
  publish(subject: string, payload: Uint8Array, headers?: Record<string, string>): Promise<void>;
  subscribe(subject: string, handler: (msg: BusMessage) => void): Subscription;
  /** Whether the broker is reachable now; while it is not, requests fail at once ('disconnected'). */
  readonly connected: boolean;
  /** Called when the link to the broker drops or comes back. Returns an unsubscribe function. */
  onConnectionChange(listener: (connected: boolean) => void): () => void;
  /** Resolves once every `serve`/`subscribe` made so far is active at the broker (readiness). */
  flush(): Promise<void>;
  /** Stops taking messages, lets in-flight handlers answer, then disconnects. */
  close(): Promise<void>;
}

export interface NatsBusConfig {
  servers: string[];
  /** Name shown in NATS monitoring. */
  name?: string;
  user?: string;
  password?: string;
  token?: string;
  /** Path of a NATS credentials (.creds) file. */
  credsFile?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  requestTimeoutMs?: number;
  /** First token of every service subject (default "svc"); keeps clusters sharing one NATS server apart. */
  subjectPrefix?: string;
  /**
   * File holding the cluster key (at least 32 bytes, base64 or raw) that authenticates every
   * message; the same on every process of the cluster. Required: connecting without it fails.
   */
  clusterKeyFile?: string;
  /**
   * First token of this process's reply subjects (default "_INBOX"). NATS permissions can then
   * let each kind of process subscribe only to its own replies (`deploy/nats/nats.conf`).
   */
  inboxPrefix?: string;
}

/** Where the bus reports what it refused or what is wrong with its setup (a pino logger fits). */
export interface BusLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}
