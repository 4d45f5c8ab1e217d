import { devConfig, loadConfigFile, MAX_WORKERS, type ServerConfig } from '@svc/config';
import type { startGateway as StartGateway } from './application';
import type { GatewayOptions, RunningProcess } from './processes';
import { REPLICATION_SERVICE, serviceNames } from './service-names';
import { notifyPrimary, startPrimary, workerCount, workerRole } from './workers';

export interface ServerFlags {
  dev: boolean;
  devRootTokenId?: string;
  devListenAddress?: string;
  devKvV1: boolean;
  config?: string;
  /** A name from `serviceNames()`, or 'all' (everything in this process). */
  service?: string;
  /** Gateway worker processes (overrides the configuration's `workers`). */
  workers?: number;
}

export const SERVER_USAGE = `Usage: svc server [options]

  -dev                          All-in-one development server: in-memory storage, initialized
                                with one unseal key and unsealed; prints the root token.
  -dev-root-token-id=ID         Root token of the dev server (default: random).
  -dev-listen-address=HOST:PORT Address of the dev server (default 127.0.0.1:8200).
  -dev-kv-v1                    Mount secret/ as kv version 1 (default 2 in dev mode).
  -config=FILE                  Server configuration (HCL or JSON).
  -service=NAME                 Run one app of the distributed topology: ${serviceNames().join(', ')}
                                (default: everything in this process).
  -workers=N                    Gateway worker processes sharing the listeners (default: the
                                configuration's workers, else one per CPU; 1 with -dev).
  -h, -help                     Print this help.
`;

const HELP_FLAGS = new Set(['-h', '-help', '--help']);

/** Parses `svc server` flags (Vault style: -flag, -flag=value, -flag value). */
export function parseServerFlags(argv: string[]): ServerFlags {
  const flags: ServerFlags = { dev: false, devKvV1: false };
  for (let i = 0; i < argv.length; i++) {
    const match = /^--?([a-z0-9-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!match) throw new Error(`unexpected argument "${argv[i]}"`);
    const [, name, inline] = match;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[++i];
      if (next === undefined) throw new Error(`flag -${name} needs a value`);
      return next;
    };
    switch (name) {
      case 'dev':
        flags.dev = inline === undefined || inline === 'true';
        break;
      case 'dev-kv-v1':
        flags.devKvV1 = inline === undefined || inline === 'true';
        break;
      case 'dev-root-token-id':
        flags.devRootTokenId = value();
        break;
      case 'dev-listen-address':
        flags.devListenAddress = value();
        break;
      case 'config':
        flags.config = value();
        break;
      case 'workers': {
        const workers = Number(value());
        if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) throw new Error(`flag -workers must be a whole number from 1 to ${MAX_WORKERS}`);
        flags.workers = workers;
        break;
      }
      case 'service': {
        const service = value();
        if (service !== 'all' && !serviceNames().includes(service)) throw new Error(`unknown service "${service}"; expected one of ${serviceNames().join(', ')}`);
        flags.service = service;
        break;
      }
      default:
        throw new Error(`unknown flag -${name}`);
    }
  }
  if (!flags.dev && !flags.config) throw new Error('either -dev or -config=FILE is required');
  return flags;
}

export interface DevCredentials {
  address: string;
  unsealKey: string;
  rootToken: string;
}

/** Starts what the flags ask for; the dev server also returns its credentials. */
export async function startServer(flags: ServerFlags): Promise<{ process: RunningProcess; dev?: DevCredentials }> {
  const config: ServerConfig = flags.dev ? devConfig({ listenAddress: flags.devListenAddress }) : await loadConfigFile(flags.config!, serviceNames());
  const service = flags.service ?? 'all';
  const role = workerRole();
  const workers = workerCount(flags.workers, config, flags.dev);
  // The primary of several workers runs no gateway: it loads none of it.
  const isPrimary = !role && workers > 1 && (service === 'all' || service === 'gateway');
  if (isPrimary) {
    const primary = await startPrimary(config, { workers, dev: flags.dev });
    return { process: primary.process, dev: primary.dev && { address: `http://${primary.process.addresses[0]}`, ...primary.dev } };
  }
  const { startGateway, startReplicationService, startService } = await import('./application');
  if (service === REPLICATION_SERVICE) return { process: await startReplicationService(config) };
  if (service !== 'all' && service !== 'gateway') return { process: await startService(config, service) };
  const options = { distributed: service === 'gateway', defaultKvVersion: flags.dev ? (flags.devKvV1 ? '1' : '2') : undefined } as const;
  // A dev server is initialized once: by itself, or by its first worker (the others follow it).
  const started: { process: RunningProcess; dev?: DevCredentials } =
    flags.dev && (!role || role.initializes) ? await startDevServer(startGateway, config, flags, options) : { process: await startGateway(config, options) };
  if (!role) return started;
  if (started.dev) notifyPrimary({ svc: 'dev', unsealKey: started.dev.unsealKey, rootToken: started.dev.rootToken });
  notifyPrimary({ svc: 'started', addresses: started.process.addresses });
  return { process: started.process };
}

async function startDevServer(
  startGateway: typeof StartGateway,
  config: ServerConfig,
  flags: ServerFlags,
  options: GatewayOptions,
): Promise<{ process: RunningProcess; dev: DevCredentials }> {
  let init: { keys: string[]; keys_base64: string[]; root_token: string } | undefined;
  // Initialized and unsealed before the listener opens, so no client ever sees it sealed.
  const running = await startGateway(config, {
    ...options,
    beforeListen: async (core) => {
      init = await core.seal.initialize({ secret_shares: 1, secret_threshold: 1, rootTokenId: flags.devRootTokenId });
      await core.seal.submitUnsealKey(init.keys[0], false);
    },
  });
  if (!init) throw new Error('dev server was not initialized');
  return {
    process: running,
    dev: { address: `http://${running.addresses[0]}`, unsealKey: init.keys_base64[0], rootToken: init.root_token },
  };
}

/** `svc server`: runs until SIGINT or SIGTERM; SIGHUP reloads (see `RunningProcess.reload`). */
export async function runServerCommand(argv: string[], io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  if (argv.some((arg) => HELP_FLAGS.has(arg))) {
    io.stdout.write(SERVER_USAGE);
    return 0;
  }
  let flags: ServerFlags;
  try {
    flags = parseServerFlags(argv);
  } catch (err) {
    io.stderr.write(`Error: ${(err as Error).message}\n\n${SERVER_USAGE}`);
    return 1;
  }
  let started: Awaited<ReturnType<typeof startServer>>;
  try {
    started = await startServer(flags);
  } catch (err) {
    io.stderr.write(`Error starting the server: ${(err as Error).message}\n`);
    return 1;
  }
  if (started.dev) io.stderr.write(devBanner(started.dev));
  const running = started.process;
  const reload = () => void reloadServer(flags, running);
  process.on('SIGHUP', reload);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // A worker whose primary is gone stops too: no one hands it connections any more.
    if (workerRole()) process.once('disconnect', stop);
  });
  process.off('SIGHUP', reload);
  await running.stop();
  // A worker's IPC channel would keep it running.
  if (workerRole() && process.connected) process.disconnect();
  return 0;
}

/** Re-reads the configuration file (a dev server has none) and reloads; a file that no longer parses changes nothing. */
async function reloadServer(flags: ServerFlags, running: RunningProcess): Promise<void> {
  let config: ServerConfig | undefined;
  if (flags.config) {
    try {
      config = await loadConfigFile(flags.config, serviceNames());
    } catch (err) {
      running.logger.error({ error: (err as Error).message }, 'reload on SIGHUP failed: the configuration has errors; nothing was reloaded');
      return;
    }
  }
  await running.reload(config).catch((err: unknown) => running.logger.error({ error: (err as Error).message }, 'reload on SIGHUP failed'));
}

function devBanner(dev: DevCredentials): string {
  return `
==> Secrets Service dev server started. Do not run a dev server in production:
    it keeps everything in memory and starts unsealed.

    export SVC_ADDR='${dev.address}'

The unseal key and root token are shown below; keep them to unseal and authenticate.

Unseal Key: ${dev.unsealKey}
Root Token: ${dev.rootToken}

`;
}
