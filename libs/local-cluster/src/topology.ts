import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { storeTables } from '@svc/storage';
import { DEFAULT_WORKERS, startServerProcess, type ServerProcess } from './processes';

export const POSTGRES_URL = process.env.SVC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const NATS_URL = process.env.SVC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
export const REDIS_ADDRESS = process.env.SVC_TEST_REDIS_ADDRESS ?? '127.0.0.1:6379';

export type TopologyKind = 'all-in-one' | 'distributed';

export interface TopologyOptions {
  /** Gateway replicas (distributed only; default 1). */
  gateways?: number;
  /** Services, each its own process (distributed only): engine and worker services, and `replication` (given the gateways' listener blocks). */
  services?: string[];
  /** Listener blocks (HCL) replacing the default plain-HTTP listener on a free port. */
  listeners?: string[];
  /**
   * Engine services get a listener too, which serves their health and metrics (distributed only):
   * `true` for a plain-HTTP one, or the listener block (HCL) to give them.
   */
  serviceListeners?: boolean | string;
  /** The NATS URL a process (by name: gateway-0, transit, ...) connects to; a relay, say (distributed only). */
  natsUrlFor?: (processName: string) => string;
  /** Bus subject prefix (distributed only; default: unique to the run). */
  subjectPrefix?: string;
  /**
   * Another NATS server than NATS_URL (distributed only), with extra lines of the bus stanza for
   * the gateways and for the services (credentials, TLS files).
   */
  nats?: { url: string; gateway?: string; service?: string };
  /** All-in-one: the storage (default embedded); distributed topologies use PostgreSQL. */
  allInOneStorage?: 'embedded' | 'postgresql';
  /**
   * Distributed: the storage in a PostgreSQL database of its own (made for the run, dropped after)
   * instead of a table of its own in POSTGRES_URL's database.
   */
  ownDatabase?: boolean;
  /** Gateway workers of each gateway process (all-in-one: the process); default DEFAULT_WORKERS (SVC_TEST_WORKERS, else 1). */
  workers?: number;
  /** More HCL for the gateways (all-in-one: the process), e.g. a `seal` stanza. */
  gatewayConfig?: string;
  /** More HCL for the service processes (distributed only; all-in-one takes `gatewayConfig`), e.g. `provider_endpoints`. */
  serviceConfig?: string;
  /** Environment variables added to every process's, e.g. NODE_EXTRA_CA_CERTS for providers served over TLS by a test CA. */
  env?: NodeJS.ProcessEnv;
  /** Called with every line a process writes, with the process's name (gateway-0, transit, ...). */
  onLog?: (processName: string, line: string) => void;
}

export interface Topology {
  kind: TopologyKind;
  /** Base URLs of the gateways, e.g. http://127.0.0.1:40123 (a restarted gateway gets a new one). */
  readonly urls: string[];
  processes: ServerProcess[];
  /** Distributed: the bus subject prefix and the cluster key file every process was given. */
  bus?: { subjectPrefix: string; clusterKeyFile: string };
  /** Distributed: the PostgreSQL database (its URL) and table of the storage, for tests that reach it directly. */
  storageUrl?: string;
  storageTable?: string;
  /** Stops one process (to test a service going away) without tearing down the rest. */
  stopProcess(name: string): Promise<void>;
  /** Stops one process and starts it again with the same configuration (a new port for a gateway). */
  restartProcess(name: string): Promise<void>;
  /** Replaces the gateways' extra HCL (`gatewayConfig`) for their next start, e.g. a new `seal` stanza. */
  reconfigureGateways(gatewayConfig: string): void;
  stop(): Promise<void>;
}

export const PLAIN_LISTENER = 'listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n}\n';

function serviceListener({ serviceListeners }: TopologyOptions): string {
  if (typeof serviceListeners === 'string') return serviceListeners;
  return serviceListeners ? PLAIN_LISTENER : '';
}

function listenerBlocks(options: TopologyOptions): string {
  return (options.listeners ?? [PLAIN_LISTENER]).join('\n');
}

/**
 * Starts a whole topology as separate local processes: all-in-one is one process with embedded
 * storage; distributed is gateway replicas plus service processes over NATS, PostgreSQL and Redis,
 * isolated from other runs by a unique table, subject prefix and lock prefix.
 */
export async function startTopology(kind: TopologyKind, options: TopologyOptions = {}): Promise<Topology> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-topology-'));
  const id = randomBytes(4).toString('hex');
  const processes: ServerProcess[] = [];
  /** How each process is started (writing its configuration file), so it can be started again. */
  const argsOf = new Map<string, () => string[]>();
  const start = (name: string, args: () => string[]) => {
    argsOf.set(name, args);
    const { onLog } = options;
    return startServerProcess(name, args(), undefined, { env: options.env, onLine: onLog && ((line) => onLog(name, line)) });
  };
  let gatewayConfig = options.gatewayConfig ?? '';
  const cleanups: (() => Promise<void>)[] = [async () => rmSync(dir, { recursive: true, force: true })];
  let bus: Topology['bus'];
  let storageTable: string | undefined;
  let storageUrl: string | undefined;
  const stopAll = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    for (const cleanup of cleanups) await cleanup();
  };

  const workers = options.workers ?? DEFAULT_WORKERS;
  try {
    if (kind === 'all-in-one') {
      const config = path.join(dir, 'server.hcl');
      let storage = `storage "embedded" {\n  path = "${path.join(dir, 'data')}"\n}`;
      if (options.allInOneStorage === 'postgresql') {
        const table = `svc_e2e_${id}`;
        [storageTable, storageUrl] = [table, POSTGRES_URL];
        cleanups.push(() => dropTable(table));
        storage = `storage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}`;
      }
      const args = () => {
        writeFileSync(config, `${listenerBlocks(options)}\n${storage}\nlog_level = "info"\n${gatewayConfig}\n`);
        return [`-config=${config}`, `-workers=${workers}`];
      };
      processes.push(await start('all-in-one', args));
    } else {
      const table = `svc_e2e_${id}`;
      storageTable = table;
      if (options.ownDatabase) {
        storageUrl = await createDatabase(table);
        cleanups.push(() => dropDatabase(table));
      } else {
        storageUrl = POSTGRES_URL;
        cleanups.push(() => dropTable(table));
      }
      const { subjectPrefix = `svc-${id}` } = options;
      const clusterKeyFile = path.join(dir, 'cluster.key');
      writeFileSync(clusterKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
      bus = { subjectPrefix, clusterKeyFile };
      // One configuration file per process: processes may reach NATS through different addresses.
      const configFor = (name: string, listeners: string, busExtra = '') => {
        const file = path.join(dir, `${name}.hcl`);
        writeFileSync(
          file,
          `${listeners}\nstorage "postgresql" {\n  connection_url = "${storageUrl}"\n  table = "${table}"\n}\n` +
            `bus "nats" {\n  servers = ["${options.natsUrlFor?.(name) ?? options.nats?.url ?? NATS_URL}"]\n  subject_prefix = "${subjectPrefix}"\n` +
            `  cluster_key_file = "${clusterKeyFile}"\n${busExtra}\n}\n` +
            `locks "redis" {\n  address = "${REDIS_ADDRESS}"\n  key_prefix = "svc-${id}:lock:"\n}\n`,
        );
        return `-config=${file}`;
      };
      const startGateway = (name: string) =>
        start(name, () => [configFor(name, `${listenerBlocks(options)}\n${gatewayConfig}`, options.nats?.gateway), '-service=gateway', `-workers=${workers}`]);
      // The first gateway creates the schema; the others and the services then start in parallel.
      processes.push(await startGateway('gateway-0'));
      const rest = await Promise.all([
        ...Array.from({ length: (options.gateways ?? 1) - 1 }, (_, i) => startGateway(`gateway-${i + 1}`)),
        // A repeated service gets numbered names (transit, transit-1, ...) so each can be stopped.
        ...(options.services ?? []).map((service, i, all) => {
          const copy = all.slice(0, i).filter((s) => s === service).length;
          const name = copy === 0 ? service : `${service}-${copy}`;
          if (service === 'replication') {
            // It binds the cluster listener the gateways' listener blocks name; secondaries unwrap their activation tokens at gateway-0.
            const apiAddr = `http://${processes[0].addresses[0]}`;
            return start(name, () => [configFor(name, `${listenerBlocks(options)}\napi_addr = "${apiAddr}"\n`, options.nats?.gateway), `-service=${service}`]);
          }
          return start(name, () => [configFor(name, `${serviceListener(options)}\n${options.serviceConfig ?? ''}`, options.nats?.service), `-service=${service}`]);
        }),
      ]);
      processes.push(...rest);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }

  return {
    kind,
    get urls() {
      return processes.filter((p) => p.name.startsWith('gateway') || p.name === 'all-in-one').map((p) => `http://${p.addresses[0]}`);
    },
    processes,
    bus,
    storageUrl,
    storageTable,
    stopProcess: async (name) => {
      await processes.find((p) => p.name === name)?.stop();
    },
    restartProcess: async (name) => {
      const index = processes.findIndex((p) => p.name === name);
      const args = argsOf.get(name);
      if (index < 0 || !args) throw new Error(`no process named ${name}`);
      await processes[index].stop();
      processes[index] = await start(name, args);
    },
    reconfigureGateways: (config) => {
      gatewayConfig = config;
    },
    stop: stopAll,
  };
}

async function onPostgres(sql: string): Promise<void> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Drops a storage table made for one test run, and the tables beside it (migrations, replication). */
export async function dropTable(table: string): Promise<void> {
  await onPostgres(`DROP TABLE IF EXISTS ${storeTables(table).map((name) => `"${name}"`).join(', ')} CASCADE`);
}

/** Makes a database for one test run on POSTGRES_URL's server; returns its URL. */
export async function createDatabase(name: string): Promise<string> {
  await onPostgres(`CREATE DATABASE "${name}"`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database `createDatabase` made, whoever is still connected to it. */
export async function dropDatabase(name: string): Promise<void> {
  await onPostgres(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
