import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { dropTable, POSTGRES_URL } from '@svc/local-cluster';
import { withPostgres } from './postgres-logins';
import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { BusPhysical, EMBEDDED_DATABASE_FILE, EmbeddedPhysical, InmemPhysical, PhysicalServer, PostgresPhysical, type Physical } from '@svc/storage';

/** Runs one SQL statement with parameters on the database of a store. */
export type RunSql = (text: string, values: unknown[]) => Promise<unknown>;

/** A freshly made, open store of one backend. */
export interface StoreFixture {
  store: Physical;
  /** A second handle on the same data: a separate process's view where the backend has one. */
  peer: Physical;
  /** The store's table. */
  table: string;
  /** Runs SQL beside the store (PostgreSQL and embedded only). */
  sql: RunSql;
  tearDown(): Promise<void>;
}

export interface StoreBackend {
  name: 'inmem' | 'postgresql' | 'embedded' | 'inmem through the primary (workers)';
  beforeAll(): Promise<void>;
  afterAll(): void;
  setUp(): Promise<StoreFixture>;
}

const inmemBackend: StoreBackend = {
  name: 'inmem',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const store = new InmemPhysical();
    await store.open();
    return {
      store,
      peer: store,
      table: '',
      sql: () => Promise.reject(new Error('the inmem store has no SQL')),
      tearDown: () => store.close(),
    };
  },
};

const postgresBackend: StoreBackend = {
  name: 'postgresql',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const table = `svc_storage_test_${process.pid}_${randomBytes(6).toString('hex')}`;
    // Two pools on one table stand for two processes; opening them together races their migrations.
    const store = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 });
    const peer = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 });
    await Promise.all([store.open(), peer.open()]);
    return {
      store,
      peer,
      table,
      sql: (text, values) => withPostgres((client) => client.query(text, values)),
      async tearDown() {
        await Promise.all([store.close(), peer.close()]);
        await dropTable(table);
      },
    };
  },
};

/**
 * The embedded store (SQLite) in a fresh directory; `peer` opens the same directory as a gateway
 * worker does, beside the server that holds its lock.
 */
const embeddedBackend: StoreBackend = {
  name: 'embedded',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const root = mkdtempSync(join(tmpdir(), 'svc-storage-embedded-'));
    const path = join(root, 'data');
    const store = new EmbeddedPhysical({ path });
    await store.open();
    const peer = new EmbeddedPhysical({ path, lockHeldBy: process.pid });
    await peer.open();
    const sql = new Database(join(path, EMBEDDED_DATABASE_FILE));
    return {
      store,
      peer,
      table: 'store',
      sql: async (text, values) => {
        const statement = sql.prepare(text);
        return statement.reader ? { rows: statement.all(...values) } : statement.run(...values);
      },
      async tearDown() {
        sql.close();
        await Promise.all([store.close(), peer.close()]);
        rmSync(root, { recursive: true, force: true });
      },
    };
  },
};

/**
 * In-memory storage as the gateway workers of one server see it: held by the primary, which serves
 * it over the bus; `store` and `peer` are two workers.
 */
const throughPrimaryBackend: StoreBackend = {
  name: 'inmem through the primary (workers)',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const owned = new InmemPhysical();
    const hub = new MemoryBusHub();
    const primaryBus = new MemoryBus({ hub });
    new PhysicalServer(owned).serve(primaryBus);
    const worker = () => new BusPhysical('inmem', new MemoryBus({ hub }));
    const [store, peer] = [worker(), worker()];
    await store.open();
    return {
      store,
      peer,
      table: '',
      sql: () => Promise.reject(new Error('the inmem store has no SQL')),
      async tearDown() {
        await primaryBus.close();
      },
    };
  },
};

/**
 * Every physical backend, for `describe.each`: in memory, PostgreSQL (127.0.0.1:5432), embedded
 * (SQLite), and in memory reached by workers through the process that owns it.
 */
export const STORE_BACKENDS: readonly StoreBackend[] = [inmemBackend, postgresBackend, embeddedBackend, throughPrimaryBackend];
