import cluster, { type Worker } from 'node:cluster';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BusRelay, MemoryBus, RemoteBusHub, type Bus, type IpcChannel } from '@svc/bus';
import type { ServerConfig } from '@svc/config';
import { MemoryLockTable, serveLockTable } from '@svc/locks';
import { serveUnsealProgress } from '@svc/seal';
import { createPhysical, DirectoryLock, EmbeddedPhysical, FeedRecordingPhysical, type Physical } from '@svc/storage';
import { createLoggers } from './logger';
import type { RunningProcess } from './running-process';

/**
 * `svc server` with several gateway workers (node:cluster): the primary process forks them, they
 * share the listeners (the primary hands each accepted connection to one worker in turn), and it
 * starts a worker again when one exits. Whatever gateway replicas share through NATS, Redis and
 * PostgreSQL, workers share the same way; in the all-in-one topology, where there is no NATS or
 * Redis, the primary is their broker (the in-memory bus relayed over IPC) and holds their lock
 * table. It holds the embedded data directory, which each worker opens beside the others; for
 * in-memory storage it makes a temporary store of the same kind in memory-backed files, which lives
 * as long as the server.
 */

/** Environment of a forked worker: its index (kept when it is started again). */
const WORKER_INDEX = 'SVC_WORKER_INDEX';
/** Set for the first worker of a dev server, which initializes and unseals the storage. */
const WORKER_INITIALIZES = 'SVC_WORKER_INITIALIZES';
/**
 * The directory of the temporary store the workers share: an in-memory server's storage, or the
 * change feed beside the PostgreSQL storage of an all-in-one server.
 */
const SHARED_TEMPORARY_STORE = 'SVC_SHARED_TEMPORARY_STORE';
/** Memory-backed files where the system has them; the temporary directory otherwise. */
const SHARED_MEMORY_ROOT = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const SHARED_TEMPORARY_PREFIX = 'svc-inmem-';

/** What a worker tells the primary over IPC besides bus traffic. */
export type WorkerNotice = { svc: 'started'; addresses: string[] } | { svc: 'dev'; unsealKey: string; rootToken: string };

/** The number of gateway workers: the flag, else the configuration, else one per CPU (one for a dev server). */
export function workerCount(flag: number | undefined, config: ServerConfig, dev: boolean): number {
  return flag ?? config.workers ?? (dev ? 1 : availableParallelism());
}


/** This process as a worker: its index, and whether it initializes a dev server. */
export function workerRole(): { index: number; initializes: boolean } | undefined {
  if (!cluster.isWorker) return undefined;
  return { index: Number(process.env[WORKER_INDEX]), initializes: process.env[WORKER_INITIALIZES] === '1' };
}

/** The worker's IPC channel to the primary. */
const toPrimary: IpcChannel = {
  send: (message) => void process.send!(message),
  onMessage: (listener) => {
    process.on('message', listener);
    return () => process.off('message', listener);
  },
};

function channelTo(worker: Worker): IpcChannel {
  return {
    send: (message) => {
      // A worker that is exiting cannot take messages; its requesters hear so when it is detached.
      if (worker.isConnected()) worker.send(message);
    },
    onMessage: (listener) => {
      worker.on('message', listener);
      return () => worker.off('message', listener);
    },
  };
}

export function notifyPrimary(notice: WorkerNotice): void {
  process.send!(notice);
}

/** In a worker: the bus to the primary (its broker and lock table). */
export function primaryBus(): Bus {
  return new MemoryBus({ hub: new RemoteBusHub(toPrimary) });
}

/** In a worker: the store its server holds, opened beside the other workers. */
export function workerStorage(config: ServerConfig): Physical {
  const shared = process.env[SHARED_TEMPORARY_STORE];
  const temporary = shared ? new EmbeddedPhysical({ path: shared, lockHeldBy: process.ppid, temporary: true }) : undefined;
  if (config.storage.type === 'inmem' && temporary) return temporary;
  const physical = createPhysical(config.storage, { lockHeldBy: process.ppid });
  // PostgreSQL keeps no change feed: the workers note their writes on the temporary store's.
  return temporary ? new FeedRecordingPhysical(physical, temporary) : physical;
}

/**
 * In the primary: the store it holds for its workers, opened first so that its directory is taken
 * and brought up to date before they open it. PostgreSQL each worker opens itself; all-in-one the
 * primary makes them a temporary store for its change feed, while gateways of the distributed
 * topology tell each other of their writes over the bus, their workers included.
 */
async function holdStorage(config: ServerConfig): Promise<{ physical: Physical; env: NodeJS.ProcessEnv; close(): Promise<void> } | undefined> {
  if (config.storage.type === 'postgresql' && config.bus) return undefined;
  if (config.storage.type === 'embedded') {
    const physical = createPhysical(config.storage);
    await physical.open();
    return { physical, env: {}, close: () => physical.close() };
  }
  removeAbandonedTemporaryStores();
  const path = mkdtempSync(join(SHARED_MEMORY_ROOT, SHARED_TEMPORARY_PREFIX));
  const physical = new EmbeddedPhysical({ path, temporary: true });
  try {
    await physical.open();
  } catch (err) {
    rmSync(path, { recursive: true, force: true });
    throw err;
  }
  return {
    physical,
    env: { [SHARED_TEMPORARY_STORE]: path },
    close: async () => {
      await physical.close();
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** Temporary stores left by servers that were killed outright: their memory is given back. */
function removeAbandonedTemporaryStores(): void {
  for (const name of readdirSync(SHARED_MEMORY_ROOT)) {
    if (!name.startsWith(SHARED_TEMPORARY_PREFIX)) continue;
    const path = join(SHARED_MEMORY_ROOT, name);
    if (DirectoryLock.abandoned(path)) rmSync(path, { recursive: true, force: true });
  }
}

/**
 * The young generation each worker's heap may grow to (MB per semi-space; V8's default is 16): a
 * worker's requests leave little garbage alive, and with V8's default each worker held some 30 MB
 * more of it without serving more (the footprint benchmark). A size given to node is kept.
 */
const WORKER_SEMI_SPACE_MB = 4;

function workerExecArgv(): string[] {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => arg.startsWith('--max-semi-space-size'));
  return given ? process.execArgv : [...process.execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}

export interface PrimaryOptions {
  workers: number;
  /** A dev server: its first worker initializes and unseals, then the others start and follow it. */
  dev: boolean;
}

/** A worker that exits this soon after it started is started again only after a pause, so a crash loop does not spin. */
const QUICK_EXIT_MS = 10_000;
const RESTART_PAUSE_MS = 1_000;

/** Runs the primary: the shared state the workers need, then the workers; resolves once every worker serves. */
export async function startPrimary(config: ServerConfig, options: PrimaryOptions): Promise<{ process: RunningProcess; dev?: { unsealKey: string; rootToken: string } }> {
  const loggers = createLoggers(config, 'primary');
  const { logger } = loggers;
  const relay = new BusRelay();
  const bus = new MemoryBus({ hub: relay.hub });
  const storage = await holdStorage(config);
  if (!config.locks) serveLockTable(bus, new MemoryLockTable());
  // A client's unseal shares reach the workers in turn; they count toward one attempt, held here.
  serveUnsealProgress(bus);
  cluster.setupPrimary({ serialization: 'advanced', execArgv: workerExecArgv() });

  let stopping = false;
  const workers = new Map<number, Worker>();
  let dev: { unsealKey: string; rootToken: string } | undefined;
  let addresses: string[] = [];

  const fork = (index: number, initializes: boolean): Promise<void> =>
    new Promise((started, failed) => {
      const worker = cluster.fork({ [WORKER_INDEX]: String(index), ...storage?.env, ...(initializes ? { [WORKER_INITIALIZES]: '1' } : {}) });
      const forkedAt = performance.now();
      const detach = relay.attach(channelTo(worker));
      let serving = false;
      workers.set(index, worker);
      worker.on('message', (notice: WorkerNotice) => {
        if (notice?.svc === 'dev') dev = { unsealKey: notice.unsealKey, rootToken: notice.rootToken };
        if (notice?.svc !== 'started') return;
        serving = true;
        addresses = notice.addresses;
        started();
      });
      worker.once('exit', (code, signal) => {
        detach();
        if (workers.get(index) === worker) workers.delete(index);
        if (!serving) return failed(new Error(`gateway worker ${index} exited (${signal ?? `code ${code}`}) before it started serving`));
        if (stopping) return;
        logger.warn({ worker: index, code, signal }, 'gateway worker exited; starting it again');
        const pause = performance.now() - forkedAt < QUICK_EXIT_MS ? RESTART_PAUSE_MS : 0;
        setTimeout(() => {
          if (!stopping) fork(index, false).catch((err: unknown) => logger.error({ worker: index, error: (err as Error).message }, 'gateway worker failed to start again'));
        }, pause);
      });
    });

  const stopWorkers = () =>
    Promise.all(
      [...workers.values()].map(
        (worker) =>
          new Promise<void>((exited) => {
            if (worker.isDead()) return exited();
            worker.once('exit', () => exited());
            worker.process.kill('SIGTERM');
          }),
      ),
    );
  const stop = async () => {
    stopping = true;
    logger.info('gateway stopping');
    await stopWorkers();
    await bus.close();
    await storage?.close();
    logger.info('gateway stopped');
    loggers.flush();
  };

  try {
    // A dev server's first worker initializes the storage, then the others start and follow its
    // unseal; otherwise they all start at once.
    const first = fork(0, options.dev);
    if (options.dev) await first;
    await Promise.all([first, ...Array.from({ length: options.workers - 1 }, (_, i) => fork(i + 1, false))]);
  } catch (err) {
    await stop();
    throw err;
  }
  logger.info({ addresses, workers: options.workers, storage: config.storage.type }, 'gateway started');
  loggers.flush();
  return {
    process: {
      logger,
      addresses,
      reload: async (reloaded) => {
        if (reloaded) loggers.setLevel(reloaded.logLevel);
        // Each worker reads the configuration again and reopens its audit files itself.
        for (const worker of workers.values()) worker.process.kill('SIGHUP');
      },
      stop,
    },
    dev,
  };
}
