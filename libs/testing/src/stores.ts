import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import vm from 'node:vm';
import { getPGliteInstance } from 'typeorm-pglite';
import { dropTable, POSTGRES_URL } from '@svc/local-cluster';
import { withPostgres } from './postgres-logins';
import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { BusPhysical, EmbeddedPhysical, InmemPhysical, PhysicalServer, PostgresPhysical, type Physical } from '@svc/storage';

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
  name: 'inmem' | 'postgresql' | 'embedded' | 'embedded through the primary (workers)';
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

/** PGlite loads Node built-ins with import(), which Jest supports only under
 * NODE_OPTIONS=--experimental-vm-modules; without it PGlite crashes the test process. */
function requireDynamicImport(): void {
  if (!('SyntheticModule' in vm)) {
    throw new Error('embedded storage tests need NODE_OPTIONS=--experimental-vm-modules (PGlite uses dynamic import)');
  }
}

/** Creating a PGlite data directory takes seconds; each test starts from a copy of one made once. */
function embeddedBackend(): StoreBackend {
  let root = '';
  let copies = 0;
  return {
    name: 'embedded',
    async beforeAll() {
      requireDynamicImport();
      root = mkdtempSync(join(tmpdir(), 'svc-storage-embedded-'));
      const store = new EmbeddedPhysical({ path: join(root, 'template') });
      await store.open();
      await store.close();
    },
    afterAll() {
      rmSync(root, { recursive: true, force: true });
    },
    async setUp() {
      const path = join(root, `store-${++copies}`);
      cpSync(join(root, 'template'), path, { recursive: true });
      const store = new EmbeddedPhysical({ path });
      await store.open();
      return {
        store,
        peer: store,
        table: 'svc_store',
        sql: async (text, values) => (await getPGliteInstance()).query(text, values),
        async tearDown() {
          await store.close();
          rmSync(path, { recursive: true, force: true });
        },
      };
    },
  };
}

/**
 * Embedded storage as the gateway workers of one server see it: opened by the primary, which serves
 * it over the bus; `store` and `peer` are two workers.
 */
function throughPrimaryBackend(): StoreBackend {
  const embedded = embeddedBackend();
  return {
    name: 'embedded through the primary (workers)',
    beforeAll: () => embedded.beforeAll(),
    afterAll: () => embedded.afterAll(),
    async setUp() {
      const owned = await embedded.setUp();
      const hub = new MemoryBusHub();
      const primaryBus = new MemoryBus({ hub });
      new PhysicalServer(owned.store).serve(primaryBus);
      const worker = () => new BusPhysical('embedded', new MemoryBus({ hub }));
      const [store, peer] = [worker(), worker()];
      await store.open();
      return {
        ...owned,
        store,
        peer,
        async tearDown() {
          await primaryBus.close();
          await owned.tearDown();
        },
      };
    },
  };
}

/**
 * Every physical backend, for `describe.each`: in memory, PostgreSQL (127.0.0.1:5432), embedded
 * (PGlite), and embedded reached by workers through the process that owns it.
 */
export const STORE_BACKENDS: readonly StoreBackend[] = [inmemBackend, postgresBackend, embeddedBackend(), throughPrimaryBackend()];

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
