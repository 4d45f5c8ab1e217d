import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import vm from 'node:vm';
import { Client } from 'pg';
import { getPGliteInstance } from 'typeorm-pglite';
import { MemoryBus, MemoryBusHub } from '@svc/bus';
import { Barrier } from './barrier';
import { BusPhysical, PhysicalServer } from './bus-physical';
import { EmbeddedPhysical } from './embedded';
import { InmemPhysical } from './inmem';
import { Keyring } from './keyring';
import { PostgresPhysical } from './postgres';
import { storedDirectory } from './sql/layout';
import { storeStatements } from './sql/statements';
import type { Physical } from './types';

const POSTGRES_URL = process.env.SVC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BIG_DIRECTORY_SIZE = 100_000;

/** Rows of one directory inserted in one statement; `sql` runs a statement with parameters. */
async function bulkInsertRows(
  sql: (text: string, values: unknown[]) => Promise<unknown>,
  table: string,
  directory: string,
  names: string[],
  value: Buffer,
): Promise<void> {
  await sql(
    `INSERT INTO "${table}" (parent_path, name, value) SELECT $1, entry, $2 FROM jsonb_array_elements_text($3::jsonb) AS entry`,
    [storedDirectory(directory), value, JSON.stringify(names)],
  );
}

interface Fixture {
  store: Physical;
  /** A second handle on the same data: a separate process's view where the backend has one. */
  peer: Physical;
  /** Fills `directory` with `names` faster than one put per key. */
  bulkInsert(directory: string, names: string[], value: Buffer): Promise<void>;
  tearDown(): Promise<void>;
}

interface Backend {
  name: string;
  beforeAll?(): Promise<void>;
  afterAll?(): void;
  setUp(): Promise<Fixture>;
}

async function withPgClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function uniqueTable(): string {
  return `svc_storage_test_${process.pid}_${randomBytes(6).toString('hex')}`;
}

async function dropTable(table: string): Promise<void> {
  await withPgClient((client) => client.query(`DROP TABLE IF EXISTS "${table}", "${table}_migrations"`));
}

const inmem: Backend = {
  name: 'inmem',
  async setUp() {
    const store = new InmemPhysical();
    await store.open();
    return {
      store,
      peer: store,
      async bulkInsert(directory, names, value) {
        await store.transaction(async (tx) => {
          for (const name of names) await tx.put(directory + name, value);
        });
      },
      tearDown: () => store.close(),
    };
  },
};

async function openPostgres(table: string): Promise<Fixture> {
  // Two pools on one table stand for two processes; opening them together races their migrations.
  const store = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 });
  const peer = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 5 });
  await Promise.all([store.open(), peer.open()]);
  return {
    store,
    peer,
    bulkInsert: (directory, names, value) =>
      withPgClient((client) => bulkInsertRows((text, values) => client.query(text, values), table, directory, names, value)),
    async tearDown() {
      await Promise.all([store.close(), peer.close()]);
      await dropTable(table);
    },
  };
}

const postgres: Backend = { name: 'postgresql', setUp: () => openPostgres(uniqueTable()) };

/** PGlite loads Node built-ins with import(), which Jest supports only under
 * NODE_OPTIONS=--experimental-vm-modules; without it PGlite crashes the test process. */
function requireDynamicImport(): void {
  if (!('SyntheticModule' in vm)) {
    throw new Error('embedded storage tests need NODE_OPTIONS=--experimental-vm-modules (PGlite uses dynamic import)');
  }
}

/** Creating a PGlite data directory takes seconds; each test starts from a copy of one made once. */
function embeddedBackend(): Backend {
  const root = mkdtempSync(join(tmpdir(), 'svc-storage-embedded-'));
  const template = join(root, 'template');
  let copies = 0;
  return {
    name: 'embedded',
    async beforeAll() {
      requireDynamicImport();
      const store = new EmbeddedPhysical({ path: template });
      await store.open();
      await store.close();
    },
    afterAll() {
      rmSync(root, { recursive: true, force: true });
    },
    async setUp() {
      const path = join(root, `store-${++copies}`);
      cpSync(template, path, { recursive: true });
      const store = new EmbeddedPhysical({ path });
      await store.open();
      return {
        store,
        peer: store,
        async bulkInsert(directory, names, value) {
          const db = await getPGliteInstance();
          await bulkInsertRows((text, values) => db.query(text, values), 'svc_store', directory, names, value);
        },
        async tearDown() {
          await store.close();
          rmSync(path, { recursive: true, force: true });
        },
      };
    },
  };
}

const embedded = embeddedBackend();

/**
 * Embedded storage as the workers of one server see it: opened by the primary, which serves it
 * over the bus; `store` and `peer` are two workers.
 */
const throughPrimary: Backend = {
  name: 'embedded through the primary (workers)',
  beforeAll: () => embedded.beforeAll!(),
  setUp: async () => {
    const owned = await embedded.setUp();
    const hub = new MemoryBusHub();
    const primaryBus = new MemoryBus({ hub });
    new PhysicalServer(owned.store).serve(primaryBus);
    const worker = () => new BusPhysical('embedded', new MemoryBus({ hub }));
    const [store, peer] = [worker(), worker()];
    await store.open();
    return {
      store,
      peer,
      bulkInsert: owned.bulkInsert,
      async tearDown() {
        await primaryBus.close();
        await owned.tearDown();
      },
    };
  },
};

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe.each([inmem, postgres, embedded, throughPrimary])('Physical conformance: $name', (backend) => {
  let fixture: Fixture;
  let store: Physical;

  beforeAll(async () => backend.beforeAll?.(), 60_000);
  afterAll(() => backend.afterAll?.());
  beforeEach(async () => {
    fixture = await backend.setUp();
    store = fixture.store;
  }, 30_000);
  afterEach(() => fixture.tearDown());

  it('stores, overwrites and deletes binary values', async () => {
    const binary = Buffer.from([0, 1, 2, 0xfe, 0xff, 0]);
    expect(await store.get('a/b')).toBeNull();
    await store.put('a/b', binary);
    expect(await store.get('a/b')).toEqual(binary);
    await store.put('a/b', bytes('second'));
    expect(await store.get('a/b')).toEqual(bytes('second'));
    await store.put('empty', Buffer.alloc(0));
    expect(await store.get('empty')).toEqual(Buffer.alloc(0));
    await store.delete('a/b');
    expect(await store.get('a/b')).toBeNull();
    await expect(store.delete('never/written')).resolves.toBeUndefined();
  });

  it('lists immediate children sorted, each sub-directory once with a trailing slash', async () => {
    for (const key of ['b/c', 'a', 'b/d/e', 'b/d/f', 'b-x', 'b', 'c/z/y', 'b0/k']) await store.put(key, bytes(key));
    expect(await store.list('')).toEqual(['a', 'b', 'b-x', 'b/', 'b0/', 'c/']);
    expect(await store.list('b/')).toEqual(['c', 'd/']);
    expect(await store.list('b/d/')).toEqual(['e', 'f']);
    expect(await store.list('c/')).toEqual(['z/']);
    expect(await store.list('missing/')).toEqual([]);
  });

  it('drops a sub-directory from listings once its last deeper key is deleted', async () => {
    await store.put('dir/only/deeper/key', bytes('v'));
    await store.put('dir/file', bytes('v'));
    expect(await store.list('dir/')).toEqual(['file', 'only/']);
    await store.delete('dir/only/deeper/key');
    expect(await store.list('dir/')).toEqual(['file']);
  });

  it('handles 50-segment paths at every level', async () => {
    const segments = Array.from({ length: 50 }, (_, i) => `s${i}`);
    const key = segments.join('/');
    await store.put(key, bytes('deep'));
    await store.put(`${segments.slice(0, 25).join('/')}/side`, bytes('side'));
    expect(await store.get(key)).toEqual(bytes('deep'));
    for (let depth = 0; depth < 49; depth++) {
      const directory = depth === 0 ? '' : `${segments.slice(0, depth).join('/')}/`;
      const expected = depth === 25 ? ['s25/', 'side'] : [`s${depth}/`];
      expect(await store.list(directory)).toEqual(expected);
    }
    expect(await store.list(`${segments.slice(0, 49).join('/')}/`)).toEqual(['s49']);
  });

  it('commits every write of a transaction together and reads its own writes', async () => {
    await store.put('tx/old', bytes('old'));
    const result = await store.transaction(async (tx) => {
      await tx.put('tx/new', bytes('new'));
      await tx.delete('tx/old');
      expect(await tx.get('tx/new')).toEqual(bytes('new'));
      expect(await tx.list('tx/')).toEqual(['new']);
      return 'done';
    });
    expect(result).toBe('done');
    expect(await store.get('tx/new')).toEqual(bytes('new'));
    expect(await store.get('tx/old')).toBeNull();
  });

  it('writes nothing when the transaction throws', async () => {
    await store.put('tx/kept', bytes('kept'));
    await expect(
      store.transaction(async (tx) => {
        await tx.put('tx/added', bytes('added'));
        await tx.put('tx/kept', bytes('changed'));
        await tx.delete('tx/kept');
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await store.get('tx/added')).toBeNull();
    expect(await store.get('tx/kept')).toEqual(bytes('kept'));
    expect(await store.list('tx/')).toEqual(['kept']);
  });

  it('refuses a transaction handle used after the transaction ended', async () => {
    const escaped = await store.transaction(async (tx) => tx);
    await expect(escaped.put('late', bytes('x'))).rejects.toThrow('storage transaction already finished');
    expect(await store.get('late')).toBeNull();
  });

  it('loses no update when concurrent read-modify-write transactions lock the key', async () => {
    const increments = 24;
    await store.put('counter', bytes('0'));
    await Promise.all(
      Array.from({ length: increments }, (_, i) =>
        (i % 2 === 0 ? store : fixture.peer).transaction(async (tx) => {
          await tx.lock('counter');
          const current = Number((await tx.get('counter'))!.toString());
          await tx.put('counter', bytes(String(current + 1)));
        }),
      ),
    );
    expect((await store.get('counter'))!.toString()).toBe(String(increments));
  });

  it('lists 100,000 keys in one directory', async () => {
    const names = Array.from({ length: BIG_DIRECTORY_SIZE }, (_, i) => `key-${String(i).padStart(6, '0')}`);
    await fixture.bulkInsert('big/', names, bytes('v'));
    await store.put('big/sub/deeper/x', bytes('v'));
    await store.put('bigger/y', bytes('v'));
    const listed = await store.list('big/');
    expect(listed).toHaveLength(BIG_DIRECTORY_SIZE + 1);
    expect(listed.slice(0, 2)).toEqual(['key-000000', 'key-000001']);
    expect(listed.slice(-2)).toEqual(['key-099999', 'sub/']);
    expect(listed).toEqual([...names, 'sub/']);
    expect(await store.list('')).toEqual(['big/', 'bigger/']);
  }, 120_000);

  /** Every entry a scan hands over, as key → text. */
  const scanned = (from: Physical): Promise<Record<string, string>> =>
    from.scan(async (entries) => {
      const seen: Record<string, string> = {};
      for await (const { key, value } of entries) seen[key] = value.toString('utf8');
      return seen;
    });

  it('scans every entry as of one point in time, across more than one batch', async () => {
    const names = Array.from({ length: 1_234 }, (_, i) => `k${i}`);
    await fixture.bulkInsert('many/', names, bytes('v'));
    await store.put('top', bytes('top'));
    await store.put('a/b/c', bytes('deep'));
    let lateWrite: Promise<void> | undefined;
    const seen = await store.scan(async (entries) => {
      const keys: string[] = [];
      for await (const { key } of entries) {
        // Not awaited here: the embedded store runs it only once the scan has returned.
        lateWrite ??= fixture.peer.put('late', bytes('late'));
        keys.push(key);
      }
      return keys;
    });
    await lateWrite;
    expect(seen.sort()).toEqual(['a/b/c', ...names.map((name) => `many/${name}`), 'top'].sort());
    expect(await store.get('late')).toEqual(bytes('late'));
  }, 60_000);

  it('replaces the whole store in one transaction, keeping the entries asked for', async () => {
    await store.put('old/gone', bytes('old'));
    await store.put('seal/kept', bytes('current'));
    async function* incoming(): AsyncGenerator<{ key: string; value: Buffer }> {
      for (let i = 0; i < 450; i++) yield { key: `new/k${i}`, value: bytes(`v${i}`) };
      yield { key: 'seal/kept', value: bytes('from the snapshot') };
    }
    await store.replaceAll(incoming(), new Set(['seal/kept', 'seal/absent']));
    const after = await scanned(store);
    expect(Object.keys(after)).toHaveLength(451);
    expect(after['seal/kept']).toBe('current');
    expect(after['new/k449']).toBe('v449');
    expect(after['old/gone']).toBeUndefined();
    expect(await store.list('')).toEqual(['new/', 'seal/']);
  });

  it('keeps the store as it was when the replacement fails midway', async () => {
    await store.put('before', bytes('before'));
    async function* failing(): AsyncGenerator<{ key: string; value: Buffer }> {
      for (let i = 0; i < 300; i++) yield { key: `partial/k${i}`, value: bytes('v') };
      throw new Error('archive truncated');
    }
    await expect(store.replaceAll(failing(), new Set())).rejects.toThrow('archive truncated');
    expect(await scanned(store)).toEqual({ before: 'before' });
  });

  it('rejects empty keys, keys ending in a slash and list prefixes without one', async () => {
    await expect(store.put('', bytes('x'))).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining('empty') });
    await expect(store.get('dir/')).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining("end in '/'") });
    await expect(store.list('dir')).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining('list prefix') });
  });
});

describe('PostgresPhysical', () => {
  let table: string;
  let fixture: Fixture;

  beforeEach(async () => {
    table = uniqueTable();
    fixture = await openPostgres(table);
  });
  afterEach(() => fixture.tearDown());

  it('lists a small directory from the index without scanning a table of 100,000 rows', async () => {
    const names = Array.from({ length: BIG_DIRECTORY_SIZE }, (_, i) => `k${i}`);
    await fixture.bulkInsert('big/', names, bytes('v'));
    await fixture.store.put('small/a', bytes('v'));
    const plan = await withPgClient(async (client) => {
      await client.query(`ANALYZE "${table}"`);
      const { rows } = await client.query(`EXPLAIN ${storeStatements(table, 500).list.text}`, ['/small/', '/small0']);
      return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).not.toContain('Seq Scan');
    expect(await fixture.store.list('small/')).toEqual(['a']);
  }, 60_000);

  it('stores no plaintext of a secret written through the barrier', async () => {
    const barrier = new Barrier(fixture.store);
    barrier.unseal(Keyring.generate());
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    await barrier.put('logical/mount/creds', bytes(secret));
    expect((await barrier.get('logical/mount/creds'))!.toString()).toBe(secret);

    const rows = await withPgClient(async (client) => (await client.query(`SELECT * FROM "${table}"`)).rows);
    expect(rows).toHaveLength(1);
    expect(rows[0].name).toBe('creds');
    expect(Buffer.isBuffer(rows[0].value)).toBe(true);
    expect((rows[0].value as Buffer).includes(bytes(secret))).toBe(false);
    expect(JSON.stringify(rows)).not.toContain(secret);
  });

  it('refuses a table name that is not a safe identifier', () => {
    expect(() => new PostgresPhysical({ connectionUrl: POSTGRES_URL, table: 'store; DROP TABLE x' })).toThrow(
      /storage table "store; DROP TABLE x" is not a safe identifier/,
    );
  });
});

describe('EmbeddedPhysical', () => {
  const roots: string[] = [];
  const newDirectory = (): string => {
    const root = mkdtempSync(join(tmpdir(), 'svc-storage-embedded-'));
    roots.push(root);
    return join(root, 'data', 'nested');
  };
  beforeAll(requireDynamicImport);
  afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  it('creates its data directory and keeps data across close and reopen', async () => {
    const path = newDirectory();
    const first = new EmbeddedPhysical({ path });
    await first.open();
    await first.put('kept/key', bytes('durable'));
    await first.transaction((tx) => tx.put('kept/tx', bytes('committed')));
    await first.close();

    const second = new EmbeddedPhysical({ path });
    await second.open();
    try {
      expect(await second.get('kept/key')).toEqual(bytes('durable'));
      expect(await second.get('kept/tx')).toEqual(bytes('committed'));
      expect(await second.list('kept/')).toEqual(['key', 'tx']);
    } finally {
      await second.close();
    }
  }, 60_000);

  it('refuses to open a second data directory in the same process', async () => {
    const first = new EmbeddedPhysical({ path: newDirectory() });
    await first.open();
    try {
      await expect(new EmbeddedPhysical({ path: newDirectory() }).open()).rejects.toThrow(/is already open in this process/);
      expect(await first.list('')).toEqual([]);
    } finally {
      await first.close();
    }
  }, 60_000);
});
