import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { ErrorKind } from '@svc/api-contract';
import type { EngineReply, EngineRequest } from './protocol';

/**
 * The engine protocol between a host and an external plugin process, over the plugin's standard
 * input and output: one JSON object per line (NDJSON; JSON text never holds a raw newline). The
 * plugin starts by saying `hello`; the host then sends the same `EngineRequest`s an engine service
 * receives, and the plugin answers each with its `EngineReply`. The plugin keeps no data of its
 * own: it asks the host to read and write its mount's storage, which the host encrypts.
 */
export const PLUGIN_PROTOCOL_VERSION = 1;

/** A storage call of a plugin, relative to its mount's storage; `tx` runs it inside a transaction the plugin began. */
export type StorageCall =
  | { op: 'get'; key: string; tx?: number }
  /** `value` is base64: values are bytes. */
  | { op: 'put'; key: string; value: string; tx?: number }
  | { op: 'delete'; key: string; tx?: number }
  | { op: 'list'; prefix: string; tx?: number }
  | { op: 'lock'; key: string; tx: number }
  | { op: 'begin' }
  | { op: 'commit'; tx: number }
  | { op: 'rollback'; tx: number };

export type StorageResult =
  | { ok: true; value?: string | null; keys?: string[]; tx?: number }
  | { ok: false; kind: ErrorKind; errors: string[] };

/** Frames the plugin writes. */
export type PluginFrame =
  | { type: 'hello'; protocol: number }
  | { type: 'reply'; id: number; reply: EngineReply }
  | { type: 'storage'; id: number; call: StorageCall };

/** Frames the host writes; the host closes the plugin's input to ask it to stop. */
export type HostFrame =
  | { type: 'request'; id: number; message: EngineRequest }
  | { type: 'storage-result'; id: number; result: StorageResult }
  /** Another gateway replica changed this key of the mount's storage: drop what is cached of it. */
  | { type: 'invalidate'; key: string };

/**
 * One side of the channel: reads frames from `input` and writes frames to `output`. A line that is
 * not a JSON object is passed to `onGarbage` (a plugin printing to stdout by mistake), not parsed further.
 */
export class FrameChannel<In, Out> {
  private closed = false;

  constructor(
    input: Readable,
    private readonly output: Writable,
    onFrame: (frame: In) => void,
    onGarbage: (length: number) => void,
  ) {
    createInterface({ input, crlfDelay: Infinity }).on('line', (line) => {
      let frame: unknown;
      try {
        frame = JSON.parse(line);
      } catch {
        frame = undefined;
      }
      if (typeof frame === 'object' && frame !== null && typeof (frame as { type?: unknown }).type === 'string') onFrame(frame as In);
      else onGarbage(line.length);
    });
    // A peer gone mid-write shows up as its exit (or end of input); the write error adds nothing.
    output.on('error', () => {
      this.closed = true;
    });
  }

  send(frame: Out): void {
    if (!this.closed) this.output.write(`${JSON.stringify(frame)}\n`);
  }

  /** Ends the output: the peer sees the end of its input. */
  end(): void {
    this.closed = true;
    this.output.end();
  }
}
