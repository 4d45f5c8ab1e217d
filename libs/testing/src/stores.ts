import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { dropTable, POSTGRES_URL } from '@svc/local-cluster';
import { withPostgres } from './postgres-logins';
import { EMBEDDED_DATABASE_FILE, EmbeddedPhysical, FeedRecordingPhysical, InmemPhysical, PostgresPhysical, type Physical } from '@svc/storage';

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
  name: 'inmem' | 'postgresql' | 'embedded' | 'inmem shared by workers' | 'postgresql with a feed shared by workers';
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

/**
 * PostgreSQL; `withFeed`: as the workers of an all-in-one server open it, each noting its writes on
 * a change feed in a temporary embedded store beside it (FeedRecordingPhysical).
 */
const postgresBackend = (withFeed: boolean): StoreBackend => ({
  name: withFeed ? 'postgresql with a feed shared by workers' : 'postgresql',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const table = `svc_storage_test_${process.pid}_${randomBytes(6).toString('hex')}`;
    const feedPath = withFeed ? join(mkdtempSync(join(tmpdir(), 'svc-storage-feed-')), 'feed') : undefined;
    // The feed's store as the primary holds it; the workers open it beside it.
    const feedHolder = feedPath ? new EmbeddedPhysical({ path: feedPath, temporary: true }) : undefined;
    await feedHolder?.open();
    const open = (): Physical => {
      const physical = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 });
      return feedPath ? new FeedRecordingPhysical(physical, new EmbeddedPhysical({ path: feedPath, lockHeldBy: process.pid, temporary: true })) : physical;
    };
    // Two pools on one table stand for two processes; opening them together races their migrations.
    const store = open();
    await store.open();
    const peer = open();
    await peer.open();
    return {
      store,
      peer,
      table,
      sql: (text, values) => withPostgres((client) => client.query(text, values)),
      async tearDown() {
        await Promise.all([store.close(), peer.close()]);
        await feedHolder?.close();
        await dropTable(table);
        if (feedPath) rmSync(dirname(feedPath), { recursive: true, force: true });
      },
    };
  },
});

/**
 * The embedded store (SQLite) in a fresh directory; `peer` opens the same directory as a gateway
 * worker does, beside the server that holds its lock. `temporary`: the store the workers of an
 * in-memory server share.
 */
const embeddedBackend = (temporary: boolean): StoreBackend => ({
  name: temporary ? 'inmem shared by workers' : 'embedded',
  async beforeAll() {},
  afterAll() {},
  async setUp() {
    const root = mkdtempSync(join(tmpdir(), 'svc-storage-embedded-'));
    const path = join(root, 'data');
    const store = new EmbeddedPhysical({ path, temporary });
    await store.open();
    const peer = new EmbeddedPhysical({ path, lockHeldBy: process.pid, temporary });
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
});

/**
 * Every physical backend, for `describe.each`: in memory, PostgreSQL (127.0.0.1:5432), embedded
 * (SQLite), the temporary store the workers of an in-memory server share, and PostgreSQL with the
 * change feed the workers of an all-in-one server share.
 */
export const STORE_BACKENDS: readonly StoreBackend[] = [inmemBackend, postgresBackend(false), embeddedBackend(false), embeddedBackend(true), postgresBackend(true)];

/**
 * The hooks of a `describe.each(STORE_BACKENDS)` block: a fresh, open store of `backend` for each
 * test (torn down after it); `each` is told it before the test runs.
 */
export function storePerTest(backend: StoreBackend, each: (fixture: StoreFixture) => void): void {
  let fixture: StoreFixture;
  beforeAll(() => backend.beforeAll(), 60_000);
  afterAll(() => backend.afterAll());
  beforeEach(async () => {
    fixture = await backend.setUp();
    each(fixture);
  }, 30_000);
  afterEach(() => fixture.tearDown());
}
