import type { Readable, Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import type { Backend, MountInfo } from '@svc/framework';
import {
  errorReply,
  FrameChannel,
  PLUGIN_PROTOCOL_VERSION,
  sameOptions,
  serveBackend,
  type EngineReply,
  type EngineRequest,
  type HostFrame,
  type PluginFrame,
  type StorageResult,
} from '@svc/engine-host';
import { createView, type StorageView } from '@svc/storage';
import { RemoteStore } from './remote-store';

/** What a plugin's backend is built with: its mount's storage (kept and encrypted by the host) and a logger (to stderr, which the host logs). */
export interface PluginContext {
  storage: StorageView;
  logger: Logger;
}

/** Builds the backend of the plugin's mount, from path declarations (`new Backend({...})` of `@svc/framework`). */
export type PluginFactory = (mount: MountInfo, context: PluginContext) => Backend;

export interface PluginIo {
  /** Frames from the host (the process's stdin). */
  input: Readable;
  /** Frames to the host (the process's stdout): nothing else may be written there. */
  output: Writable;
  logger?: Logger;
}

export interface PluginServer {
  /** Resolves once the host closed the channel and the backend was cleaned up. */
  closed: Promise<void>;
}

interface Mounted {
  backend: Backend;
  options: Record<string, string>;
  ready: Promise<void>;
}

/**
 * Serves a backend over the plugin protocol on `io`: says hello, answers the host's requests with
 * the backend built for the mount they name (built again when the mount's options change), and
 * cleans the backend up when the host closes the channel.
 */
export function servePlugin(factory: PluginFactory, io: PluginIo): PluginServer {
  const logger = io.logger ?? pino(pino.destination(2));
  const waiting = new Map<number, (result: StorageResult) => void>();
  let nextStorageId = 1;
  let mounted: Mounted | undefined;
  const storage = createView(
    new RemoteStore(
      (call) =>
        new Promise((resolve) => {
          const id = nextStorageId++;
          waiting.set(id, resolve);
          channel.send({ type: 'storage', id, call });
        }),
    ),
    '',
  );

  const forMount = (mount: MountInfo): Mounted => {
    if (mounted && sameOptions(mounted.options, mount.options)) return mounted;
    const previous = mounted?.backend;
    if (previous) void previous.cleanup().catch(() => logger.warn('backend cleanup failed'));
    const backend = factory(mount, { storage, logger });
    const entry: Mounted = { backend, options: mount.options, ready: backend.initialize() };
    // A failed initialize is answered to its request; the next request builds the backend again.
    entry.ready.catch(() => {
      if (mounted === entry) mounted = undefined;
    });
    mounted = entry;
    return entry;
  };

  const handle = async (message: EngineRequest): Promise<EngineReply> => {
    try {
      const { backend, ready } = forMount(message.mount);
      await ready;
      return await serveBackend(backend, message);
    } catch (err) {
      return errorReply(err, message, logger);
    }
  };

  const channel = new FrameChannel<HostFrame, PluginFrame>(
    io.input,
    io.output,
    (frame) => {
      if (frame.type === 'request') void handle(frame.message).then((reply) => channel.send({ type: 'reply', id: frame.id, reply }));
      else if (frame.type === 'storage-result') {
        waiting.get(frame.id)?.(frame.result);
        waiting.delete(frame.id);
      } else if (frame.type === 'invalidate') mounted?.backend.invalidate(frame.key);
    },
    (length) => logger.warn({ length }, 'the host sent a line that is not a protocol frame; ignored'),
  );
  channel.send({ type: 'hello', protocol: PLUGIN_PROTOCOL_VERSION });

  const closed = new Promise<void>((resolve) => {
    io.input.once('end', () => {
      for (const resolveCall of waiting.values()) resolveCall({ ok: false, kind: 'unavailable', errors: ['the host closed the plugin channel'] });
      waiting.clear();
      const backend = mounted?.backend;
      mounted = undefined;
      void (backend?.cleanup() ?? Promise.resolve()).catch(() => logger.warn('backend cleanup failed')).finally(resolve);
    });
  });
  return { closed };
}

/**
 * The main of a plugin executable: serves `factory` on stdin/stdout and exits when the host closes
 * stdin. Console output goes to stderr, as stdout carries the protocol.
 */
export function runPlugin(factory: PluginFactory): void {
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const { closed } = servePlugin(factory, { input: process.stdin, output: process.stdout });
  void closed.then(() => process.exit(0));
}
