import { connect, createSecureServer, type ClientHttp2Session, type Http2SecureServer, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { CertifiedKey } from './pki';
import type { ReplicationMode } from './types';

/** The TLS server name a secondary asks for: it picks the mode's cluster CA and certificate. */
export function clusterServerName(mode: ReplicationMode): string {
  return `${mode}.replication.svc`;
}

/**
 * Bodies are bounded: a request (a heartbeat, a Merkle question naming buckets or keys) at 4 MiB,
 * an answer (a batch of log entries, stored values) at 32 MiB; the primary keeps its batches well
 * below it (`MAX_BATCH_BYTES` of the log shipper).
 */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/** Long enough for a long-polled read of the log (which answers within a few seconds). */
const REQUEST_TIMEOUT_MS = 30_000;

/** A secondary's request over the cluster link, after its certificate was checked. */
export interface LinkRequest {
  mode: ReplicationMode;
  /** The secondary id (the common name of its client certificate). */
  secondaryId: string;
  /** Where the secondary's connection came from (host:port). */
  remoteAddress: string;
  path: string;
  body: Record<string, unknown>;
}

/** The primary side's answers to the link's calls, and who may call. */
export interface LinkHandler {
  /** The mode's listener certificate and cluster CA while this node is its primary, else none. */
  credentials(mode: ReplicationMode): { server: CertifiedKey; caCert: string } | undefined;
  /** Whether a client certificate (by serial) of this secondary id is still accepted. */
  accepts(mode: ReplicationMode, secondaryId: string, serial: string): boolean;
  handle(request: LinkRequest): Promise<Record<string, unknown>>;
  onRefused(mode: ReplicationMode | undefined, secondaryId: string, reason: string): void;
}

/**
 * The cluster listener: HTTP/2 over mutual TLS, one port for both modes (the TLS server name picks
 * the mode's CA and certificate). A connection must present a client certificate the mode's CA
 * issued to a secondary id the primary still knows; a revoked one is closed at once.
 */
export class ClusterListener {
  private server?: Http2SecureServer;
  private readonly contexts = new Map<ReplicationMode, { context: SecureContext; server: CertifiedKey }>();
  private readonly sessions = new Map<string, Set<Http2Session>>();

  constructor(private readonly handler: LinkHandler) {}

  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  /** The bound host:port. */
  get address(): string {
    const info = this.server?.address() as AddressInfo | null;
    return info ? `${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}` : '';
  }

  async listen(hostPort: string): Promise<void> {
    if (this.server) return;
    const { host, port } = splitHostPort(hostPort);
    const server = createSecureServer({
      minVersion: 'TLSv1.3',
      requestCert: true,
      rejectUnauthorized: true,
      allowHTTP1: false,
      SNICallback: (name, done) => {
        const mode = modeOfServerName(name);
        done(null, mode ? this.contextFor(mode) : undefined);
      },
    });
    server.on('secureConnection', (socket: TLSSocket) => this.admit(socket));
    server.on('session', (session) => this.track(session));
    server.on('stream', (stream, headers) => void this.serve(stream, String(headers[':path'] ?? ''), String(headers[':method'] ?? '')));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Drops the mode's cached TLS context (its CA or certificate changed) and its connections. */
  reset(mode: ReplicationMode): void {
    this.contexts.delete(mode);
    for (const [key, sessions] of this.sessions) if (key.startsWith(`${mode}/`)) sessions.forEach((session) => session.destroy());
  }

  /** Closes every connection of one secondary (revocation). */
  disconnect(mode: ReplicationMode, secondaryId: string): void {
    this.sessions.get(`${mode}/${secondaryId}`)?.forEach((session) => session.destroy());
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.contexts.clear();
    if (!server) return;
    for (const sessions of this.sessions.values()) sessions.forEach((session) => session.destroy());
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private contextFor(mode: ReplicationMode): SecureContext | undefined {
    const credentials = this.handler.credentials(mode);
    if (!credentials) return undefined;
    const cached = this.contexts.get(mode);
    if (cached?.server === credentials.server) return cached.context;
    const context = createSecureContext({ cert: credentials.server.cert, key: credentials.server.key, ca: credentials.caCert, minVersion: 'TLSv1.3' });
    this.contexts.set(mode, { context, server: credentials.server });
    return context;
  }

  /** Who the peer is, from its verified certificate; a certificate no longer accepted closes the connection. */
  private admit(socket: TLSSocket): void {
    const mode = modeOfServerName((socket as TLSSocket & { servername?: string }).servername || '');
    const peer = socket.getPeerX509Certificate();
    const id = peer ? commonName(peer) : '';
    if (!mode || !peer || !this.handler.accepts(mode, id, peer.serialNumber.toLowerCase())) {
      this.handler.onRefused(mode, id, peer ? 'certificate revoked or unknown' : 'no client certificate');
      socket.destroy();
    }
  }

  private track(session: Http2Session): void {
    const socket = session.socket as TLSSocket;
    const mode = modeOfServerName((socket as TLSSocket & { servername?: string }).servername || '');
    const peer = socket.getPeerX509Certificate();
    if (!mode || !peer) return;
    const key = `${mode}/${commonName(peer)}`;
    const set = this.sessions.get(key) ?? new Set();
    set.add(session);
    this.sessions.set(key, set);
    session.once('close', () => set.delete(session));
  }

  private async serve(stream: ServerHttp2Stream, path: string, method: string): Promise<void> {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const mode = socket && modeOfServerName((socket as TLSSocket & { servername?: string }).servername || '');
    const peer = socket?.getPeerX509Certificate();
    const reply = (status: number, body: unknown) => {
      if (stream.destroyed) return;
      stream.respond({ ':status': status, 'content-type': 'application/json' });
      stream.end(JSON.stringify(body));
    };
    // Checked again per request: a revocation may have come after the handshake.
    if (!mode || !peer || !this.handler.accepts(mode, commonName(peer), peer.serialNumber.toLowerCase())) {
      stream.session?.destroy();
      return;
    }
    if (method !== 'POST') return reply(405, { errors: ['only POST is served here'] });
    try {
      const body = await readJson(stream, MAX_REQUEST_BYTES);
      const answer = await this.handler.handle({ mode, secondaryId: commonName(peer), remoteAddress: `${socket.remoteAddress}:${socket.remotePort}`, path, body });
      reply(200, answer);
    } catch (err) {
      reply(400, { errors: [err instanceof Error ? err.message : 'request refused'] });
    }
  }
}

/** The secondary side: one HTTP/2 session to the primary's cluster address, mutual TLS. */
export class ClusterClient {
  private session?: ClientHttp2Session;
  /** Where `session` goes: a session still connecting is reused too (a second one would close it). */
  private sessionUrl?: string;

  constructor(
    private readonly mode: ReplicationMode,
    private readonly caCert: string,
    private readonly clientCert: CertifiedKey,
  ) {}

  /** POSTs `body` to `path` at `address` (https://host:port or host:port); rejects on any failure. */
  async call(address: string, path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const session = this.sessionTo(address);
    return new Promise((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json' });
      stream.setTimeout(REQUEST_TIMEOUT_MS, () => stream.close());
      let status = 0;
      stream.on('response', (headers) => (status = Number(headers[':status'])));
      readJson(stream, MAX_ANSWER_BYTES)
        .then((answer) => (status === 200 ? resolve(answer) : reject(new Error(String((answer.errors as string[] | undefined)?.[0] ?? `status ${status}`)))))
        .catch(reject);
      stream.on('error', reject);
      // 'close' follows 'end' in the same turn, before the answer's promise settles: only a close without an answer fails the call.
      let answered = false;
      stream.on('end', () => (answered = true));
      stream.on('close', () => {
        if (!answered) reject(new Error('the cluster connection closed'));
      });
      stream.end(JSON.stringify(body));
    });
  }

  close(): void {
    this.session?.destroy();
    this.session = undefined;
  }

  private sessionTo(address: string): ClientHttp2Session {
    const url = `https://${address.replace(/^https?:\/\//, '')}`;
    const current = this.session;
    if (current && !current.closed && !current.destroyed && this.sessionUrl === url && (current.connecting || current.originSet?.includes(new URL(url).origin))) return current;
    this.close();
    const session = connect(url, {
      servername: clusterServerName(this.mode),
      ca: this.caCert,
      cert: this.clientCert.cert,
      key: this.clientCert.key,
      minVersion: 'TLSv1.3',
    });
    // A failed connection is reported to the call that made it; the session is not reused.
    session.on('error', () => session.destroy());
    session.once('close', () => {
      if (this.session === session) this.session = undefined;
    });
    this.session = session;
    this.sessionUrl = url;
    return session;
  }
}

function modeOfServerName(name: string): ReplicationMode | undefined {
  if (name === clusterServerName('performance')) return 'performance';
  if (name === clusterServerName('dr')) return 'dr';
  return undefined;
}

function commonName(cert: X509Certificate): string {
  return /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? '';
}

export function splitHostPort(hostPort: string): { host: string; port: number } {
  const match = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(hostPort);
  if (!match) throw new Error(`"${hostPort}" is not host:port`);
  return { host: match[1], port: Number(match[2]) };
}

function readJson(stream: NodeJS.ReadableStream, maxBytes: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) reject(new Error(`body larger than ${maxBytes} bytes`));
      else chunks.push(chunk);
    });
    stream.on('end', () => {
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        const parsed: unknown = text === '' ? {} : JSON.parse(text);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('body must be a JSON object');
        resolve(parsed as Record<string, unknown>);
      } catch (err) {
        reject(err instanceof Error ? err : new Error('bad JSON'));
      }
    });
    stream.on('error', reject);
  });
}
