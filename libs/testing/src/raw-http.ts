import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** An answer as read off the wire. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * One client connection that writes bytes exactly as given (pipelined, split, malformed) and reads
 * the answers off the wire one at a time, so tests see what a client on that connection sees.
 */
export class RawHttpClient {
  /** Settles when the server (or `end`) closes the connection. */
  readonly closed: Promise<void>;
  private received = Buffer.alloc(0);
  private wake?: () => void;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.wake?.();
    });
    // Bytes written after the server closed are refused; the answers read are what tests check.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        resolve();
        this.wake?.();
      }),
    );
  }

  /** A connection to `url`'s host and port, over TLS (trusting `ca`) for https. */
  static connect(url: string, options: { ca?: string } = {}): RawHttpClient {
    const { protocol, hostname, port } = new URL(url);
    const host = hostname.replace(/^\[|\]$/g, '');
    const socket = protocol === 'https:' ? tlsConnect({ host, port: Number(port), ca: options.ca }) : tcpConnect(Number(port), host);
    return new RawHttpClient(socket);
  }

  /** Writes each part as a write of its own, a few milliseconds apart (so each arrives as a packet of its own). */
  async send(...parts: (string | Buffer)[]): Promise<void> {
    for (const [i, part] of parts.entries()) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      this.socket.write(part);
    }
  }

  /** Stops reading, as a client busy writing does: what the server sends waits in the kernel. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** The next answer on the connection, or undefined when the connection closes before one is whole. */
  async answer(): Promise<RawAnswer | undefined> {
    for (;;) {
      const answer = this.takeAnswer();
      if (answer || this.socket.destroyed) return answer;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async answers(count: number): Promise<(RawAnswer | undefined)[]> {
    const all: (RawAnswer | undefined)[] = [];
    for (let i = 0; i < count; i++) all.push(await this.answer());
    return all;
  }

  end(): void {
    this.socket.destroy();
  }

  /** Takes a whole answer off the front of what was received (bodies framed by Content-Length, as the server frames them). */
  private takeAnswer(): RawAnswer | undefined {
    const headEnd = this.received.indexOf('\r\n\r\n');
    if (headEnd < 0) return undefined;
    const [statusLine, ...lines] = this.received.subarray(0, headEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const bodyStart = headEnd + 4;
    const bodyEnd = bodyStart + Number(headers['content-length'] ?? 0);
    if (this.received.length < bodyEnd) return undefined;
    const body = this.received.subarray(bodyStart, bodyEnd).toString();
    this.received = this.received.subarray(bodyEnd);
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}
