import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { POSTGRES_URL, STORE_BACKENDS, storePerTest, type StoreFixture } from '@svc/testing';
import { Barrier } from './barrier';
import { EmbeddedPhysical } from './embedded/embedded';
import { Keyring } from './keyring';
import { PostgresPhysical } from './postgres';
import { storedDirectory } from './sql/layout';
import { storeStatements } from './sql/statements';
import { ReadStamp, type ChangeFeed, type Physical } from './types';

const BIG_DIRECTORY_SIZE = 100_000;

/** Fills `directory` with `names` faster than one put per key: one SQL statement, or one transaction. */
async function bulkInsert(fixture: StoreFixture, directory: string, names: string[], value: Buffer): Promise<void> {
  if (fixture.store.kind !== 'postgresql') {
    await fixture.store.transaction(async (tx) => {
      for (const name of names) await tx.put(directory + name, value);
    });
    return;
  }
  await fixture.sql(
    `INSERT INTO "${fixture.table}" (parent_path, name, value) SELECT $1, entry, $2 FROM jsonb_array_elements_text($3::jsonb) AS entry`,
    [storedDirectory(directory), value, JSON.stringify(names)],
  );
}

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe.each(STORE_BACKENDS)('Physical conformance: $name', (backend) => {
  let fixture: StoreFixture;
  let store: Physical;
  storePerTest(backend, (current) => {
    fixture = current;
    store = current.store;
  });

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

  it('answers reads issued together in a transaction, its own puts among them, each with its own value', async () => {
    await store.put('tx/a', bytes('a'));
    await store.put('tx/b/c', bytes('c'));
    await store.transaction(async (tx) => {
      await tx.put('tx/put', bytes('put'));
      await tx.put('tx/a', bytes('a2'));
      const read = await Promise.all(['tx/a', 'tx/missing', 'tx/b/c', 'tx/put', 'tx/b/c'].map((key) => tx.get(key)));
      expect(read).toEqual([bytes('a2'), null, bytes('c'), bytes('put'), bytes('c')]);
      await tx.put('tx/gone', bytes('gone'));
      await tx.delete('tx/gone');
      await tx.put('tx/b/d', bytes('d'));
      expect(await tx.list('tx/b/')).toEqual(['c', 'd']);
      expect(await tx.get('tx/gone')).toBeNull();
    });
    expect(await Promise.all(['tx/a', 'tx/put', 'tx/gone', 'tx/b/d'].map((key) => store.get(key)))).toEqual([bytes('a2'), bytes('put'), null, bytes('d')]);
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

  it('loses no update when transactions take the locks of two keys together', async () => {
    const increments = 12;
    await Promise.all(['pair/a', 'pair/b'].map((key) => store.put(key, bytes('0'))));
    await Promise.all(
      Array.from({ length: increments }, (_, i) =>
        (i % 2 === 0 ? store : fixture.peer).transaction(async (tx) => {
          await Promise.all([tx.lock('pair/a'), tx.lock('pair/b'), tx.lock('pair/a')]);
          const [a, b] = await Promise.all([tx.get('pair/a'), tx.get('pair/b')]);
          await tx.put('pair/a', bytes(String(Number(a!.toString()) + 1)));
          await tx.put('pair/b', bytes(String(Number(b!.toString()) + 2)));
        }),
      ),
    );
    expect((await Promise.all(['pair/a', 'pair/b'].map((key) => store.get(key)))).map(String)).toEqual([String(increments), String(2 * increments)]);
  });

  it('makes a conditional write only while every key it compares holds what was read', async () => {
    await store.put('cw/a', bytes('1'));
    const read = new ReadStamp(await store.get('cw/a'));
    const write = (unchanged: [string, ReadStamp][], writes: [string, Buffer | null][]) =>
      store.writeIfUnchanged({ locks: ['cw/a'], unchanged: new Map(unchanged), writes: new Map(writes) });

    expect(await write([['cw/a', read], ['cw/b', ReadStamp.ABSENT]], [['cw/c', bytes('new')], ['cw/a', bytes('2')]])).toBe(true);
    expect((await Promise.all(['cw/a', 'cw/c'].map((key) => store.get(key)))).map(String)).toEqual(['2', 'new']);
    // The stamp read before the write no longer matches; neither does an absence that ended.
    expect(await write([['cw/a', read]], [['cw/d', bytes('lost')]])).toBe(false);
    expect(await write([['cw/c', ReadStamp.ABSENT]], [['cw/d', bytes('lost')]])).toBe(false);
    expect(await store.get('cw/d')).toBeNull();
    expect(await write([['cw/a', new ReadStamp(await store.get('cw/a'))]], [['cw/c', null], ['cw/missing', null]])).toBe(true);
    expect(await store.get('cw/c')).toBeNull();
  });

  it('loses no update when conditional writes and transactions change one key concurrently', async () => {
    const increments = 16;
    await store.put('cw/counter', bytes('0'));
    const conditionally = async (from: Physical) => {
      for (;;) {
        const current = await from.get('cw/counter');
        const next = bytes(String(Number(current!.toString()) + 1));
        const locks = ['cw/counter'];
        if (await from.writeIfUnchanged({ locks, unchanged: new Map([['cw/counter', new ReadStamp(current)]]), writes: new Map([['cw/counter', next]]) })) return;
      }
    };
    const inTransaction = (from: Physical) =>
      from.transaction(async (tx) => {
        await tx.lock('cw/counter');
        await tx.put('cw/counter', bytes(String(Number((await tx.get('cw/counter'))!.toString()) + 1)));
      });
    await Promise.all(Array.from({ length: increments }, (_, i) => (i % 2 === 0 ? conditionally : inTransaction)(i % 4 < 2 ? store : fixture.peer)));
    expect((await store.get('cw/counter'))!.toString()).toBe(String(increments));
  });

  it('lists 100,000 keys in one directory', async () => {
    const names = Array.from({ length: BIG_DIRECTORY_SIZE }, (_, i) => `key-${String(i).padStart(6, '0')}`);
    await bulkInsert(fixture, 'big/', names, bytes('v'));
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
    await bulkInsert(fixture, 'many/', names, bytes('v'));
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

  describe('write-ahead log', () => {
    const logged = async (after = 0) =>
      (await store.log.entriesAfter(after, 1000)).map(({ idx, op, key, value }) => [idx, op, key, value?.toString() ?? null]);

    it('logs nothing while logging is off, and a reset entry when it is switched on', async () => {
      await store.put('early', bytes('unlogged'));
      expect(await store.log.logging()).toBe(false);
      expect(await logged()).toEqual([]);
      await store.log.setLogging(true);
      await store.log.setLogging(true);
      expect(await store.log.logging()).toBe(true);
      expect(await logged()).toEqual([[1, 'reset', '', null]]);
      await store.log.setLogging(false);
      await store.put('late', bytes('unlogged too'));
      expect(await store.log.lastIndex()).toBe(1);
    });

    it('logs every committed write in commit order: single writes, and a transaction its last write per key', async () => {
      await store.log.setLogging(true);
      await store.put('a', bytes('1'));
      await store.delete('never/written');
      await store.transaction(async (tx) => {
        await tx.put('b', bytes('first'));
        await tx.put('c', bytes('3'));
        await tx.delete('missing');
        await tx.put('b', bytes('second'));
        await tx.delete('a');
      });
      await store.delete('c');
      expect(await logged()).toEqual([
        [1, 'reset', '', null],
        [2, 'put', 'a', '1'],
        [3, 'put', 'c', '3'],
        [4, 'put', 'b', 'second'],
        [5, 'delete', 'a', null],
        [6, 'delete', 'c', null],
      ]);
      expect(await store.log.lastIndex()).toBe(6);
      expect(await logged(4)).toEqual([
        [5, 'delete', 'a', null],
        [6, 'delete', 'c', null],
      ]);
    });

    it('logs a conditional write like a transaction, the deletes of keys it found among them, and nothing when it refuses', async () => {
      await store.log.setLogging(true);
      await store.put('a', bytes('1'));
      const writes = new Map<string, Buffer | null>([['b', bytes('2')], ['missing', null], ['a', null]]);
      expect(await store.writeIfUnchanged({ locks: ['a'], unchanged: new Map([['b', new ReadStamp(bytes('other'))]]), writes })).toBe(false);
      expect(await store.writeIfUnchanged({ locks: ['a'], unchanged: new Map([['b', ReadStamp.ABSENT]]), writes })).toBe(true);
      expect(await logged()).toEqual([
        [1, 'reset', '', null],
        [2, 'put', 'a', '1'],
        [3, 'put', 'b', '2'],
        [4, 'delete', 'a', null],
      ]);
    });

    it('makes many concurrent conditional writes as if one after another, and logs each one that wrote', async () => {
      // More at once than SQL storage keeps statements of them under way: the others go together, in one transaction.
      await store.log.setLogging(true);
      await store.put('shared', bytes('0'));
      const read = new ReadStamp(await store.get('shared'));
      const conditional = (lock: string, stamp: ReadStamp, key: string, value: Buffer | null) =>
        store.writeIfUnchanged({ locks: [lock], unchanged: new Map([[lock, stamp]]), writes: new Map([[key, value]]) });
      const fresh = Array.from({ length: 30 }, (_, i) => conditional(`new/${i}`, ReadStamp.ABSENT, `new/${i}`, bytes(`v${i}`)));
      const racing = Array.from({ length: 6 }, (_, i) => conditional('shared', read, 'shared', bytes(`racer ${i}`)));
      const refused = Array.from({ length: 4 }, (_, i) => conditional('shared', new ReadStamp(bytes('stale')), `refused/${i}`, bytes('never')));
      const [freshWrote, racingWrote, refusedWrote] = await Promise.all([fresh, racing, refused].map((writes) => Promise.all(writes)));
      expect(freshWrote).toEqual(fresh.map(() => true));
      expect(racingWrote.filter(Boolean)).toHaveLength(1);
      expect(refusedWrote).toEqual(refused.map(() => false));
      expect((await store.get('shared'))!.toString()).toBe(`racer ${racingWrote.indexOf(true)}`);
      expect((await Promise.all(fresh.map((_, i) => store.get(`new/${i}`)))).map(String)).toEqual(fresh.map((_, i) => `v${i}`));
      expect(await store.list('')).toEqual(['new/', 'shared']);
      // After the reset entry and the first put: one entry per write that wrote, indexes without a gap.
      const entries = await logged(2);
      expect(entries.map(([idx]) => idx)).toEqual(Array.from({ length: 31 }, (_, i) => i + 3));
      expect(entries.map(([, , key]) => key).sort()).toEqual([...fresh.map((_, i) => `new/${i}`), 'shared'].sort());
    });

    it('commits and logs a transaction of more writes than one SQL statement takes parameters', async () => {
      // 30,000 puts are 90,000 parameters as rows and again as log entries: PostgreSQL takes 65,535 per statement.
      const count = 30_000;
      const keys = Array.from({ length: count }, (_, i) => `bulk/${String(i).padStart(5, '0')}`);
      await store.log.setLogging(true);
      await store.transaction(async (tx) => {
        for (const key of keys) await tx.put(key, bytes(key));
        await tx.delete(keys[0]);
      });
      expect(await store.get(keys[count - 1])).toEqual(bytes(keys[count - 1]));
      expect(await store.get(keys[0])).toBeNull();
      // The reset entry, then the last write of each key in the order of those writes.
      expect(await store.log.lastIndex()).toBe(count + 1);
      const tail = await store.log.entriesAfter(count - 2, 10);
      expect(tail.map(({ idx, op, key }) => [idx, op, key])).toEqual([
        [count - 1, 'put', keys[count - 2]],
        [count, 'put', keys[count - 1]],
        [count + 1, 'delete', keys[0]],
      ]);
    }, 60_000);

    it('commits a write, its log entry and metadata together, and none of them when the transaction throws', async () => {
      await store.log.setLogging(true);
      await store.transaction(async (tx) => {
        await tx.put('kept', bytes('v'));
        await tx.putMeta('state', bytes('one'));
      });
      await expect(
        store.transaction(async (tx) => {
          await tx.put('dropped', bytes('v'));
          await tx.putMeta('state', bytes('two'));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await store.get('dropped')).toBeNull();
      expect(await logged()).toEqual([
        [1, 'reset', '', null],
        [2, 'put', 'kept', 'v'],
      ]);
      expect(await store.log.getMeta('state')).toEqual(bytes('one'));
      await store.transaction((tx) => tx.putMeta('state', null));
      expect(await store.log.getMeta('state')).toBeNull();
    });

    it('logs a replacement of the whole store as a reset, and trims the log', async () => {
      await store.log.setLogging(true);
      await store.put('a', bytes('1'));
      async function* replacement() {
        yield { key: 'b', value: bytes('2') };
      }
      await store.replaceAll(replacement(), new Set());
      expect(await logged()).toEqual([
        [1, 'reset', '', null],
        [2, 'put', 'a', '1'],
        [3, 'reset', '', null],
      ]);
      await store.log.trimThrough(2);
      expect(await logged()).toEqual([[3, 'reset', '', null]]);
      expect(await store.log.lastIndex()).toBe(3);
    });

    it('snapshots the store, its log and its metadata as of one point in time', async () => {
      await store.log.setLogging(true);
      await store.transaction(async (tx) => {
        await tx.put('k', bytes('before'));
        await tx.putMeta('m/one', bytes('1'));
      });
      const seen = await store.snapshot(async (snapshot) => {
        // Written by another handle while the snapshot is open.
        const late = fixture.peer.transaction(async (tx) => {
          await tx.put('k', bytes('after'));
          await tx.putMeta('m/two', bytes('2'));
        });
        await late;
        const entries = [];
        for await (const entry of snapshot.entries) entries.push([entry.key, entry.value.toString()]);
        const result = { lastIndex: snapshot.lastIndex, entries, meta: (await snapshot.meta('m/')).map(({ name }) => name), log: (await snapshot.entriesAfter(0, 10)).length };
        return { result, late };
      });
      await seen.late;
      expect(seen.result).toEqual({ lastIndex: 2, entries: [['k', 'before']], meta: ['m/one'], log: 2 });
      expect(await store.log.lastIndex()).toBe(3);
    });

    it('imports another log as it is, indexes kept, then its last index and logging switch, without a reset entry', async () => {
      const entry = (idx: number, op: 'put' | 'delete' | 'reset', key: string, value: string | null) => ({ idx, op, key, value: value === null ? null : bytes(value) });
      await store.log.importLog([entry(41, 'reset', '', null), entry(42, 'put', 'a', 'one')], { lastIndex: 43, logging: false });
      await store.log.importLog([entry(43, 'delete', 'b', null)], { lastIndex: 43, logging: false });
      expect(await store.log.logging()).toBe(false);
      await store.put('unlogged', bytes('x'));
      await store.log.importLog([], { lastIndex: 43, logging: true });
      expect(await store.log.logging()).toBe(true);
      await store.put('c', bytes('logged'));
      expect(await logged()).toEqual([
        [41, 'reset', '', null],
        [42, 'put', 'a', 'one'],
        [43, 'delete', 'b', null],
        [44, 'put', 'c', 'logged'],
      ]);
      expect(await logged(42)).toEqual([
        [43, 'delete', 'b', null],
        [44, 'put', 'c', 'logged'],
      ]);
      const seen = await store.snapshot(async (snapshot) => ({ lastIndex: snapshot.lastIndex, log: (await snapshot.entriesAfter(0, 10)).map(({ idx }) => idx) }));
      expect(seen).toEqual({ lastIndex: 44, log: [41, 42, 43, 44] });
    });

    it('imports the last index of a log whose entries were all trimmed, and goes on from it', async () => {
      await store.log.importLog([], { lastIndex: 7, logging: true });
      await store.put('a', bytes('1'));
      expect(await logged()).toEqual([[8, 'put', 'a', '1']]);
    });

    it('gives concurrent writers from two handles consecutive indexes in commit order, one entry per write', async () => {
      await store.log.setLogging(true);
      const writers = Array.from({ length: 40 }, (_, i) => {
        const handle = i % 2 === 0 ? store : fixture.peer;
        const key = `shared/${i % 5}`;
        return i % 3 === 0
          ? handle.put(key, bytes(String(i)))
          : handle.transaction(async (tx) => {
              await tx.put(key, bytes(String(i)));
              await tx.put(`own/${i}`, bytes(String(i)));
            });
      });
      await Promise.all(writers);
      const entries = await store.log.entriesAfter(0, 1000);
      expect(entries.map(({ idx }) => idx)).toEqual(Array.from({ length: entries.length }, (_, i) => i + 1));
      expect(entries.filter(({ key }) => key.startsWith('own/'))).toHaveLength(40 - 14);
      // Replaying the log gives the store's final values.
      const replayed = new Map<string, string>();
      for (const { op, key, value } of entries) if (op === 'put') replayed.set(key, value!.toString());
      for (let i = 0; i < 5; i++) expect((await store.get(`shared/${i}`))!.toString()).toBe(replayed.get(`shared/${i}`));
    });
  });

  it('rejects empty keys, keys ending in a slash and list prefixes without one', async () => {
    await expect(store.put('', bytes('x'))).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining('empty') });
    await expect(store.get('dir/')).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining("end in '/'") });
    await expect(store.list('dir')).rejects.toMatchObject({ kind: 'bad-request', message: expect.stringContaining('list prefix') });
  });
});

describe('PostgresPhysical', () => {
  const postgres = STORE_BACKENDS.find((backend) => backend.name === 'postgresql')!;
  let table: string;
  let fixture: StoreFixture;

  beforeEach(async () => {
    fixture = await postgres.setUp();
    table = fixture.table;
  });
  afterEach(() => fixture.tearDown());

  it('lists a small directory from the index without scanning a table of 100,000 rows', async () => {
    const names = Array.from({ length: BIG_DIRECTORY_SIZE }, (_, i) => `k${i}`);
    await bulkInsert(fixture, 'big/', names, bytes('v'));
    await fixture.store.put('small/a', bytes('v'));
    await fixture.sql(`ANALYZE "${table}"`, []);
    const { rows } = (await fixture.sql(`EXPLAIN ${storeStatements(table, 500).list.text}`, ['/small/', '/small0'])) as { rows: Record<string, string>[] };
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).not.toContain('Seq Scan');
    expect(await fixture.store.list('small/')).toEqual(['a']);
  }, 60_000);

  it('stores no plaintext of a secret written through the barrier', async () => {
    const barrier = new Barrier(fixture.store);
    barrier.unseal(Keyring.generate());
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    await barrier.put('logical/mount/creds', bytes(secret));
    expect((await barrier.get('logical/mount/creds'))!.toString()).toBe(secret);

    const { rows } = (await fixture.sql(`SELECT * FROM "${table}"`, [])) as { rows: Record<string, unknown>[] };
    expect(rows).toHaveLength(1);
    expect(rows[0].name).toBe('creds');
    expect(Buffer.isBuffer(rows[0].value)).toBe(true);
    expect((rows[0].value as Buffer).includes(bytes(secret))).toBe(false);
    expect(JSON.stringify(rows)).not.toContain(secret);
  });

  it('shares a table among servers, and gives it to a migration only while none has it open, and back', async () => {
    const opened = (use: 'server' | 'migration') => {
      const store = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 1, use });
      return store.open().then(() => store);
    };
    // The fixture's two stores are two servers on the table.
    await expect(opened('migration')).rejects.toThrow(`postgresql storage table "${table}" is in use by a running server: stop every server and service using it before migrating it`);
    await Promise.all([fixture.store.close(), fixture.peer.close()]);
    const migration = await opened('migration');
    await expect(opened('server')).rejects.toThrow(`postgresql storage table "${table}" is being migrated (svc operator migrate holds it): start the server once the migration has finished`);
    await expect(opened('migration')).rejects.toThrow(`postgresql storage table "${table}" is being migrated by another svc operator migrate`);
    await migration.close();
    const server = await opened('server');
    expect(await server.list('')).toEqual([]);
    await server.close();
    await Promise.all([fixture.store.open(), fixture.peer.open()]);
  });

  it('refuses a table name that is not a safe identifier', () => {
    expect(() => new PostgresPhysical({ connectionUrl: 'postgres://127.0.0.1/x', table: 'store; DROP TABLE x' })).toThrow(
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

  it('keeps the directory and its files private to the server\'s user', async () => {
    const path = newDirectory();
    const store = new EmbeddedPhysical({ path });
    await store.open();
    try {
      await store.put('a', bytes('x'));
      expect(statSync(path).mode & 0o777).toBe(0o700);
      const files = readdirSync(path);
      expect(files).toEqual(expect.arrayContaining(['svc.db', 'svc.db-wal', 'svc.db-shm', 'svc.lock']));
      for (const file of files) expect([file, statSync(join(path, file)).mode & 0o777]).toEqual([file, 0o600]);
    } finally {
      await store.close();
    }
  });

  it('lets one server hold the directory, and its workers open it beside it', async () => {
    const path = newDirectory();
    const server = new EmbeddedPhysical({ path });
    await server.open();
    try {
      await expect(new EmbeddedPhysical({ path, lockHeldBy: process.pid + 1 }).open()).rejects.toThrow(/is not held by this worker's server/);
      const worker = new EmbeddedPhysical({ path, lockHeldBy: process.pid });
      await worker.open();
      await worker.put('from/worker', bytes('w'));
      expect(await server.get('from/worker')).toEqual(bytes('w'));
      await worker.close();
    } finally {
      await server.close();
    }
    await expect(new EmbeddedPhysical({ path, lockHeldBy: process.pid }).open()).rejects.toThrow(/is not held by this worker's server/);
  });

  it('refuses a directory of the earlier format and says how to move it', async () => {
    const path = newDirectory();
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'PG_VERSION'), '17\n');
    await expect(new EmbeddedPhysical({ path }).open()).rejects.toThrow(/earlier versions; move it .*svc operator migrate/);
  });

  describe('change feed', () => {
    let path: string;
    let holder: EmbeddedPhysical;
    let store: EmbeddedPhysical;
    let peer: EmbeddedPhysical;
    let feed: ChangeFeed;
    let peerFeed: ChangeFeed;
    // As a server with several workers opens it: the primary holds it, the workers follow each other.
    beforeEach(async () => {
      path = newDirectory();
      holder = new EmbeddedPhysical({ path });
      await holder.open();
      store = new EmbeddedPhysical({ path, lockHeldBy: process.pid });
      await store.open();
      peer = new EmbeddedPhysical({ path, lockHeldBy: process.pid });
      await peer.open();
      [feed, peerFeed] = [store.changes!, peer.changes!];
    });
    afterEach(async () => {
      await peer.close();
      await store.close();
      await holder.close();
    });

    it('is kept by the processes that open the store beside its holder, not by the holder, which has no other writer to follow', () => {
      expect(holder.changes).toBeUndefined();
      expect(store.changes).toBeDefined();
    });

    it("tells each process the keys the others committed, not its own, once", async () => {
      expect(feed.poll()).toBeUndefined();
      await store.put('own', bytes('1'));
      expect(feed.poll()).toBeUndefined();
      await peer.put('a/one', bytes('1'));
      await peer.transaction(async (tx) => {
        await tx.put('a/two', bytes('2'));
        await tx.delete('a/one');
      });
      await peer.writeIfUnchanged({ locks: ['c'], unchanged: new Map([['c', ReadStamp.ABSENT]]), writes: new Map([['c', bytes('3')]]) });
      await peerFeed.note(['sys/peer-unsealed']);
      expect(feed.poll()).toEqual(['a/one', 'a/two', 'a/one', 'c', 'sys/peer-unsealed']);
      expect(feed.poll()).toBeUndefined();
      expect(peerFeed.poll()).toEqual(['own']);
    });

    it('says everything changed when the store was replaced', async () => {
      await peer.replaceAll((async function* () { yield { key: 'new', value: bytes('n') }; })(), new Set());
      expect(feed.poll()).toBe('everything');
      expect(await store.get('new')).toEqual(bytes('n'));
    });

    it('says everything changed to a process that fell further behind than the feed keeps', async () => {
      await peer.put('first', bytes('1'));
      const sql = new Database(join(path, 'svc.db'));
      try {
        sql.prepare('DELETE FROM changes').run();
      } finally {
        sql.close();
      }
      await peer.put('second', bytes('2'));
      expect(feed.poll()).toBe('everything');
      await peer.put('third', bytes('3'));
      expect(feed.poll()).toEqual(['third']);
    });
  });
});

