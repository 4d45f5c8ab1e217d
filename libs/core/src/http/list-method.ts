import type { Socket } from 'node:net';

/**
 * Node's HTTP parser (llhttp) only knows a fixed set of methods and rejects `LIST`, which the
 * API uses. `LIST` and `LINK` (a method llhttp accepts) share their first two letters, so this
 * rewrites the third and fourth byte of a request line that starts with `LIST ` in place, before
 * the parser sees it; the router then treats `LINK` as `LIST`. The rewrite only happens at the
 * start of a request, so the tracker follows HTTP/1.1 framing (Content-Length and chunked bodies)
 * to know where each request on a keep-alive connection begins.
 */

const enum State {
  RequestStart, // before the first byte of a request (CR/LF allowed)
  Head, // inside the request line and headers
  Body, // Content-Length body bytes
  ChunkSize, // reading a chunk-size line
  ChunkData, // chunk payload (plus its trailing CRLF)
  Trailers, // after the last chunk, until an empty line
  Passthrough, // framing we do not follow (upgrade, oversized head): stop rewriting
}

const MAX_HEAD = 64 * 1024;
const L = 0x4c;
const I = 0x49;
const S = 0x53;
const T = 0x54;
const N = 0x4e;
const K = 0x4b;
const X = 0x58;
const CR = 0x0d;
const LF = 0x0a;
const HEAD_END = Buffer.from('\r\n\r\n');

export class ListMethodRewriter {
  private state = State.RequestStart;
  private methodPos = 0; // bytes of the current request seen so far while they can still be "LIST"
  private maybeList = true;
  /** The head so far (already rewritten) while its end is not yet seen. */
  private headParts: Buffer[] = [];
  private headLength = 0;
  private remaining = 0;
  private line: number[] = [];

  /** Rewrites `chunk` in place (it is the only copy of these bytes) and returns it. */
  transform(chunk: Buffer): Buffer {
    for (let i = 0; i < chunk.length; i++) {
      switch (this.state) {
        case State.Passthrough:
          return chunk;
        case State.RequestStart: {
          const b = chunk[i];
          if (b === CR || b === LF) continue;
          this.state = State.Head;
          this.headParts = [];
          this.headLength = 0;
          this.methodPos = 0;
          this.maybeList = true;
          i--; // reprocess this byte as part of the head
          break;
        }
        case State.Head: {
          for (let m = i; this.maybeList && m < chunk.length && this.methodPos < 4; m++) this.rewriteMethodByte(chunk, m);
          // Find the blank line ending the head, also across a chunk boundary (up to 3 bytes back).
          const carry = Math.min(3, this.headLength);
          const probe = carry > 0 ? Buffer.concat([this.lastHeadBytes(carry), chunk.subarray(i)]) : chunk.subarray(i);
          const found = probe.indexOf(HEAD_END);
          const end = found < 0 ? chunk.length : i + found - carry + HEAD_END.length;
          // A head split across chunks is copied: the socket may reuse a chunk's memory later.
          this.headParts.push(found >= 0 ? chunk.subarray(i, end) : Buffer.from(chunk.subarray(i, end)));
          this.headLength += end - i;
          if (this.headLength > MAX_HEAD) {
            this.state = State.Passthrough;
            return chunk;
          }
          if (found >= 0) this.startBody();
          i = end - 1;
          break;
        }
        case State.Body: {
          const take = Math.min(this.remaining, chunk.length - i);
          this.remaining -= take;
          i += take - 1;
          if (this.remaining === 0) this.state = State.RequestStart;
          break;
        }
        case State.ChunkSize: {
          const b = chunk[i];
          if (b !== LF) {
            this.line.push(b);
            break;
          }
          const size = parseInt(Buffer.from(this.line).toString('latin1').split(';')[0].trim(), 16);
          this.line = [];
          if (Number.isNaN(size)) {
            this.state = State.Passthrough; // the parser will reject it
            return chunk;
          }
          if (size === 0) {
            this.state = State.Trailers;
          } else {
            this.remaining = size + 2; // payload and its CRLF
            this.state = State.ChunkData;
          }
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.remaining, chunk.length - i);
          this.remaining -= take;
          i += take - 1;
          if (this.remaining === 0) this.state = State.ChunkSize;
          break;
        }
        case State.Trailers: {
          const b = chunk[i];
          if (b !== LF) {
            if (b !== CR) this.line.push(b);
            break;
          }
          const empty = this.line.length === 0;
          this.line = [];
          if (empty) this.state = State.RequestStart;
          break;
        }
      }
    }
    return chunk;
  }

  /**
   * "LIS" is rewritten to "LIN" as soon as it is seen (its bytes may leave in this chunk); the
   * fourth byte then decides: "T" becomes "K" (LINK), anything else restores the "S" when it is
   * still in this chunk, or else keeps the method invalid (never a valid LINK), as it was.
   */
  private rewriteMethodByte(chunk: Buffer, i: number): void {
    if (!this.maybeList) return;
    const pos = this.methodPos++;
    const b = chunk[i];
    if (pos === 0) this.maybeList = b === L;
    else if (pos === 1) this.maybeList = b === I;
    else if (pos === 2) {
      this.maybeList = b === S;
      if (this.maybeList) chunk[i] = N;
    } else {
      this.maybeList = false;
      if (b === T) chunk[i] = K;
      else if (i > 0) chunk[i - 1] = S;
      else if (b === K) chunk[i] = X;
    }
  }

  private lastHeadBytes(count: number): Buffer {
    const joined = this.headParts.length === 1 ? this.headParts[0] : Buffer.concat(this.headParts);
    return joined.subarray(joined.length - count);
  }

  private startBody(): void {
    const headText = Buffer.concat(this.headParts, this.headLength).toString('latin1');
    this.headParts = [];
    this.headLength = 0;
    const chunked = /\r\ntransfer-encoding:[^\r\n]*chunked/i.test(headText);
    const upgrade = /\r\nupgrade:/i.test(headText) || headText.startsWith('CONNECT ');
    if (upgrade) {
      this.state = State.Passthrough;
      return;
    }
    if (chunked) {
      this.state = State.ChunkSize;
      this.line = [];
      return;
    }
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(headText);
    this.remaining = length ? Number(length[1]) : 0;
    this.state = this.remaining > 0 ? State.Body : State.RequestStart;
  }
}

/**
 * Makes the HTTP server read `socket` through the rewriter. The server normally consumes a TCP
 * handle natively; marking the handle consumed makes it fall back to 'data' events, which pass
 * through the rewriter first.
 */
export function acceptListMethod(socket: Socket): void {
  const handle = (socket as unknown as { _handle?: { _consumed?: boolean } })._handle;
  if (handle) handle._consumed = true;
  const rewriter = new ListMethodRewriter();
  const emit = socket.emit;
  socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'data' && Buffer.isBuffer(args[0])) args[0] = rewriter.transform(args[0]);
    return (emit as (event: string | symbol, ...args: unknown[]) => boolean).call(this, event, ...args);
  } as Socket['emit'];
}
