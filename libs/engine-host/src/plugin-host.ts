import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import type { MountInfo } from '@svc/framework';
import { describeRequestError, errorOf, ServiceError } from '@svc/api-contract';
import { createView, type Barrier, type KeyValueStore, type StorageView, type Transaction } from '@svc/storage';
import { errorReply, mountStoragePrefix } from './engine-host';
import { FrameChannel, PLUGIN_PROTOCOL_VERSION, type HostFrame, type PluginFrame, type StorageCall, type StorageResult } from './plugin-protocol';
import type { EngineReply, EngineRequest } from './protocol';

/** How to start a registered plugin: what the catalog holds, with the command resolved inside the plugin directory. */
export interface PluginLaunch {
  name: string;
  /** Absolute path of the executable. */
  command: string;
  args: string[];
  /** `KEY=value` entries added to the plugin's environment. */
  env: string[];
  /** Hex SHA-256 the executable must have at every launch. */
  sha256: string;
}

/** Finds how to launch the plugin of a mount (read from the catalog at every launch). */
export type PluginResolver = (mount: MountInfo) => Promise<PluginLaunch>;

export interface PluginHostOptions {
  /** Waits for the plugin's hello; a plugin that says nothing by then is stopped. */
  startTimeoutMs?: number;
  /** First restart delay after a crash; doubled per failed attempt up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Waits this long for a plugin to exit after its input closed before killing it. */
  stopTimeoutMs?: number;
  /** A request the plugin has not answered this long is answered 503 for it (the server's `default_max_request_duration`). */
  requestTimeoutMs?: number;
}

const DEFAULTS: Required<PluginHostOptions> = { startTimeoutMs: 30_000, backoffMs: 1_000, maxBackoffMs: 30_000, stopTimeoutMs: 5_000, requestTimeoutMs: 90_000 };

/** A plugin that ran this long since its start counts as healthy: its next crash restarts after the first delay again. */
const HEALTHY_RUN_MS = 60_000;

/** Hex SHA-256 of a file, streamed. */
export function fileSha256(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/** Checks the executable against the catalog's digest; the message says what to do about a mismatch. */
export async function verifyPluginBinary(launch: PluginLaunch): Promise<void> {
  let actual: string;
  try {
    actual = await fileSha256(launch.command);
  } catch (err) {
    throw ServiceError.badRequest(`plugin "${launch.name}": cannot read its command ${launch.command} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (actual !== launch.sha256.toLowerCase()) {
    throw ServiceError.badRequest(
      `plugin "${launch.name}": the sha256 of ${launch.command} does not match the catalog (the file changed since it was registered); register it again with its new sha256`,
    );
  }
}

/**
 * Runs external plugins, one process per mount, for the process that hosts them (the gateway). A
 * process is started on the first request of its mount, after its executable's sha256 is checked;
 * it receives the mount's messages over its standard input and asks for its storage over its
 * standard output, and the host reads and writes that storage through the barrier (the plugin never
 * sees a key). A process that dies fails its requests in flight with 503 and is started again
 * after a delay that doubles while it keeps failing; requests meanwhile are answered 503.
 */
export class PluginHost {
  private readonly running = new Map<string, PluginProcess>();
  private readonly options: Required<PluginHostOptions>;

  constructor(
    private readonly barrier: Barrier,
    private readonly resolve: PluginResolver,
    private readonly logger: Logger,
    options: PluginHostOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  async handle(message: EngineRequest): Promise<EngineReply> {
    try {
      if (this.barrier.sealed) throw ServiceError.sealed();
      return await this.forMount(message.mount).request(message);
    } catch (err) {
      return errorReply(err, message, this.logger);
    }
  }

  /**
   * Starts a plugin and stops it again once it said hello: what enabling a mount checks, so a
   * plugin that cannot run is refused then rather than at its first request.
   */
  async check(mount: MountInfo): Promise<void> {
    const probe = new PluginProcess(mount, this.resolve, this.barrier, this.logger, this.options, false);
    try {
      await probe.start();
    } finally {
      await probe.stop();
    }
  }

  /** Barrier keys another replica changed: running plugins of those mounts drop what they cached. */
  invalidate(keys: readonly string[]): void {
    for (const process of this.running.values()) process.invalidate(keys);
  }

  /** Stops the plugin of a mount (disabled or reloaded); its next request starts it again. */
  forget(uuid: string): void {
    const process = this.running.get(uuid);
    this.running.delete(uuid);
    if (process) void process.stop();
  }

  /** Stops the plugins of mounts that no longer exist (disabled through another replica). */
  retainOnly(uuids: ReadonlySet<string>): void {
    for (const uuid of [...this.running.keys()]) if (!uuids.has(uuid)) this.forget(uuid);
  }

  async closeAll(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((process) => process.stop()));
  }

  private forMount(mount: MountInfo): PluginProcess {
    let process = this.running.get(mount.uuid);
    if (!process) {
      process = new PluginProcess(mount, this.resolve, this.barrier, this.logger, this.options, true);
      this.running.set(mount.uuid, process);
    }
    return process;
  }
}

interface Pending {
  resolve: (reply: EngineReply) => void;
}

interface OpenTransaction {
  tx: Transaction;
  finish: (commit: boolean) => void;
  done: Promise<void>;
}

/** Thrown inside a transaction the plugin rolled back, so the storage layer undoes its writes. */
class RolledBack extends Error {}

/** The process of one mount's plugin, from start to stop, with restarts in between. */
class PluginProcess {
  private child?: ChildProcessWithoutNullStreams;
  private channel?: FrameChannel<PluginFrame, HostFrame>;
  private starting?: Promise<void>;
  /** Why the plugin is not running, while it waits for its restart. */
  private down?: string;
  private stopped = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private failures = 0;
  private startedAt = 0;
  private restartTimer?: NodeJS.Timeout;
  private exited?: Promise<void>;
  private readonly storage: PluginStorage;
  private name: string;
  private readonly log: Logger;

  constructor(
    private readonly mount: MountInfo,
    private readonly resolve: PluginResolver,
    barrier: Barrier,
    logger: Logger,
    private readonly options: Required<PluginHostOptions>,
    /** Restarts after a crash (a mount's plugin); a probe does not. */
    private readonly restarts: boolean,
  ) {
    this.storage = new PluginStorage(createView(barrier, mountStoragePrefix(mount)));
    this.name = mount.type;
    this.log = logger.child({ plugin: mount.type, mount_path: mount.path });
  }

  async request(message: EngineRequest): Promise<EngineReply> {
    if (this.down !== undefined) throw ServiceError.unavailable(this.down);
    if (!this.channel) {
      this.starting ??= this.start().finally(() => {
        this.starting = undefined;
      });
      // Whatever stopped it (a changed binary, say) is the reason given, as a 503: the mount exists but cannot serve.
      await this.starting.catch((err: unknown) => {
        throw ServiceError.unavailable(err instanceof ServiceError ? err.errors.join('; ') : `plugin "${this.name}" failed to start`);
      });
    }
    const channel = this.channel;
    if (!channel) throw ServiceError.unavailable(this.down ?? `plugin "${this.name}" is not running`);
    const id = this.nextId++;
    return new Promise<EngineReply>((resolve) => {
      // A plugin that stops answering holds up only its own mount's requests, each until the deadline.
      const deadline = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, kind: 'unavailable', errors: [`plugin "${this.name}" did not answer within ${this.options.requestTimeoutMs / 1000} s`] });
      }, this.options.requestTimeoutMs);
      this.pending.set(id, {
        resolve: (reply) => {
          clearTimeout(deadline);
          resolve(reply);
        },
      });
      channel.send({ type: 'request', id, message });
    });
  }

  /** Checks the binary, starts it and waits for its hello. A failure leaves the plugin down (and, for a mount, restarting). */
  async start(): Promise<void> {
    try {
      const launch = await this.resolve(this.mount);
      this.name = launch.name;
      await verifyPluginBinary(launch);
      await this.spawn(launch);
      this.down = undefined;
    } catch (err) {
      const reason = err instanceof ServiceError ? err.errors.join('; ') : `plugin "${this.name}" failed to start`;
      if (!(err instanceof ServiceError)) this.log.error({ err: describeRequestError(err) }, 'plugin failed to start');
      else this.log.error({ reason }, 'plugin failed to start');
      this.scheduleRestart(reason);
      throw err instanceof ServiceError ? err : ServiceError.unavailable(reason);
    }
  }

  invalidate(keys: readonly string[]): void {
    const prefix = this.storage.view.prefix;
    for (const key of keys) if (key.startsWith(prefix)) this.channel?.send({ type: 'invalidate', key: key.slice(prefix.length) });
  }

  /** Closes the plugin's input (it cleans up and exits), then kills it if it has not exited in time. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || !this.exited) return;
    this.channel?.end();
    const killer = setTimeout(() => child.kill('SIGKILL'), this.options.stopTimeoutMs);
    await this.exited;
    clearTimeout(killer);
  }

  private spawn(launch: PluginLaunch): Promise<void> {
    // The server's own environment may hold credentials: the plugin gets PATH and what its registration names.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    for (const entry of launch.env) {
      const eq = entry.indexOf('=');
      env[entry.slice(0, eq)] = entry.slice(eq + 1);
    }
    const child = spawn(launch.command, launch.args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    this.startedAt = Date.now();
    createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => this.log.info({ stderr: line }, 'plugin stderr'));
    return new Promise<void>((resolve, reject) => {
      let hello = false;
      const timer = setTimeout(() => {
        reject(ServiceError.unavailable(`plugin "${launch.name}" did not start within ${this.options.startTimeoutMs} ms (its stderr is in the server log)`));
        child.kill('SIGKILL');
      }, this.options.startTimeoutMs);
      const channel = new FrameChannel<PluginFrame, HostFrame>(
        child.stdout,
        child.stdin,
        (frame) => {
          if (frame.type === 'hello' && !hello) {
            hello = true;
            clearTimeout(timer);
            if (frame.protocol !== PLUGIN_PROTOCOL_VERSION) {
              reject(ServiceError.badRequest(`plugin "${launch.name}" speaks protocol version ${String(frame.protocol)}; this server speaks ${PLUGIN_PROTOCOL_VERSION}`));
              child.kill('SIGKILL');
              return;
            }
            this.channel = channel;
            resolve();
          } else if (hello) this.receive(frame);
        },
        (length) => this.log.warn({ length }, 'plugin wrote a line to stdout that is not a protocol frame; ignored'),
      );
      this.exited = new Promise<void>((exited) => {
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          this.onExit(code, signal);
          reject(ServiceError.unavailable(`plugin "${launch.name}" exited while starting (${describeExit(code, signal)}; its stderr is in the server log)`));
          exited();
        });
      });
      // A command that cannot be executed (not executable, say) fails here, without an exit.
      child.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(ServiceError.badRequest(`plugin "${launch.name}": cannot run ${launch.command} (${err.code ?? 'error'})`));
        if (child.pid === undefined) {
          this.child = undefined;
          this.exited = undefined;
        }
      });
    });
  }

  private receive(frame: PluginFrame): void {
    if (frame.type === 'reply') {
      const pending = this.pending.get(frame.id);
      this.pending.delete(frame.id);
      pending?.resolve(frame.reply);
    } else if (frame.type === 'storage') {
      const { id, call } = frame;
      this.storage.serve(call).then(
        (result) => this.channel?.send({ type: 'storage-result', id, result }),
        (err: unknown) => {
          if (!(err instanceof ServiceError)) this.log.error({ err: describeRequestError(err) }, 'plugin storage call failed');
          this.channel?.send({ type: 'storage-result', id, result: { ok: false, ...errorOf(err) } });
        },
      );
    }
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.channel = undefined;
    this.child = undefined;
    this.storage.rollBackAll();
    const reason = `plugin "${this.name}" exited (${describeExit(code, signal)}); it is being restarted`;
    for (const pending of this.pending.values()) pending.resolve({ ok: false, kind: 'unavailable', errors: [reason] });
    this.pending.clear();
    if (this.stopped) return;
    this.log.error({ code, signal }, 'plugin exited');
    if (Date.now() - this.startedAt >= HEALTHY_RUN_MS) this.failures = 0;
    this.scheduleRestart(reason);
  }

  private scheduleRestart(reason: string): void {
    if (!this.restarts || this.stopped || this.restartTimer) return;
    this.down = reason;
    const delay = Math.min(this.options.backoffMs * 2 ** this.failures, this.options.maxBackoffMs);
    this.failures++;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.start().then(
        () => {
          this.log.info('plugin restarted');
        },
        () => undefined, // logged by start, which schedules the next attempt
      );
    }, delay);
    this.restartTimer.unref();
  }
}

/**
 * Serves a plugin's storage calls on its mount's view of the barrier. A transaction the plugin
 * begins stays open here until it commits or rolls back (or exits: then it is rolled back).
 */
export class PluginStorage {
  private readonly transactions = new Map<number, OpenTransaction>();
  private nextTx = 1;

  constructor(readonly view: StorageView) {}

  async serve(call: StorageCall): Promise<StorageResult> {
    switch (call.op) {
      case 'begin':
        return { ok: true, tx: await this.begin() };
      case 'commit':
      case 'rollback': {
        const open = this.transaction(call.tx);
        this.transactions.delete(call.tx);
        open.finish(call.op === 'commit');
        await open.done;
        return { ok: true };
      }
      case 'lock':
        await this.transaction(call.tx).tx.lock(call.key);
        return { ok: true };
      default: {
        const store: KeyValueStore = call.tx === undefined ? this.view : this.transaction(call.tx).tx;
        if (call.op === 'get') return { ok: true, value: (await store.get(call.key))?.toString('base64') ?? null };
        if (call.op === 'put') await store.put(call.key, Buffer.from(call.value, 'base64'));
        else if (call.op === 'delete') await store.delete(call.key);
        else return { ok: true, keys: await store.list(call.prefix) };
        return { ok: true };
      }
    }
  }

  /** Opens a transaction that stays open until the plugin commits or rolls it back (or exits). */
  private begin(): Promise<number> {
    const id = this.nextTx++;
    return new Promise<number>((started, failed) => {
      let finish: (commit: boolean) => void = () => undefined;
      const body = new Promise<void>((finished, undo) => {
        finish = (commit) => (commit ? finished() : undo(new RolledBack()));
      });
      const open: Omit<OpenTransaction, 'tx' | 'done'> & Partial<OpenTransaction> = { finish };
      // The storage layer may call back before `transaction` returns: `open` is filled in either order.
      const done = this.view.transaction(async (tx) => {
        open.tx = tx;
        this.transactions.set(id, open as OpenTransaction);
        started(id);
        await body;
      });
      open.done = done.catch(ignoreRollback);
      open.done.catch((err: unknown) => failed(err));
    });
  }

  private transaction(id: number): OpenTransaction {
    const open = this.transactions.get(id);
    if (!open) throw ServiceError.badRequest(`plugin storage: no open transaction ${id}`);
    return open;
  }

  /** The plugin is gone: its open transactions are undone. */
  rollBackAll(): void {
    for (const open of this.transactions.values()) open.finish(false);
    this.transactions.clear();
  }
}

function ignoreRollback(err: unknown): void {
  if (!(err instanceof RolledBack)) throw err;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `exit code ${String(code)}`;
}
