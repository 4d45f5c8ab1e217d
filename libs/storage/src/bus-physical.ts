import { randomUUID } from 'node:crypto';
import { decodeJson, encodeJson, type Bus, type BusMessage, type Subscription } from '@svc/bus';
import { ServiceError, type ErrorKind } from '@svc/http';
import { writeIfUnchangedInTransaction } from './conditional-write';
import { TRANSACTION_FINISHED, type ConditionalWrite, type LogHead, type MetaRecord, type Physical, type PhysicalTransaction, type StoredEntry, type StoreSnapshot, type WalEntry, type WriteAheadLog } from './types';

/**
 * Storage that only one process may open (embedded: PGlite is one session in one process; inmem)
 * shared by the workers of one `svc server`: the primary opens it and `PhysicalServer` answers for
 * it over the bus; each worker uses a `BusPhysical`. Transactions, scans, snapshots and replacements
 * stay open in the primary between calls, and are ended there if their worker exits.
 */

type Op =
  | 'open' | 'get' | 'put' | 'delete' | 'list' | 'lock' | 'put-meta' | 'tx-begin' | 'tx-end'
  | 'scan-begin' | 'snapshot-begin' | 'scan-next' | 'snapshot-meta' | 'snapshot-log' | 'scan-end'
  | 'replace-begin' | 'replace-push' | 'replace-end'
  | 'log-set' | 'log-state' | 'log-last' | 'log-after' | 'log-trim' | 'log-import' | 'meta-get';

interface WireEntry {
  key: string;
  /** base64 */
  value: string;
}

/** Entries per scan or replace message: bounded, so one message stays small whatever the store. */
const BATCH_ENTRIES = 256;
const EMPTY = new Uint8Array();

/** Marks a reply that carries a `ServiceError` (its kind; the payload is its messages). */
const KIND_HEADER = 'svc-error-kind';

const storageSubject = (subjectPrefix: string) => `${subjectPrefix}.storage.call`;
const toWire = (entries: StoredEntry[]): WireEntry[] => entries.map(({ key, value }) => ({ key, value: value.toString('base64') }));
const fromWire = (entries: WireEntry[]): StoredEntry[] => entries.map(({ key, value }) => ({ key, value: Buffer.from(value, 'base64') }));
const bytes = (payload: Uint8Array) => Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);

interface WireWalEntry extends Omit<WalEntry, 'value'> {
  /** base64, or null */
  value: string | null;
}
const walToWire = (entries: readonly WalEntry[]): WireWalEntry[] => entries.map((entry) => ({ ...entry, value: entry.value?.toString('base64') ?? null }));
const walFromWire = (entries: WireWalEntry[]): WalEntry[] => entries.map((entry) => ({ ...entry, value: entry.value === null ? null : Buffer.from(entry.value, 'base64') }));
const metaFromWire = (records: WireEntry[]): MetaRecord[] => fromWire(records).map(({ key, value }) => ({ name: key, value }));
const metaToWire = (records: MetaRecord[]): WireEntry[] => toWire(records.map(({ name, value }) => ({ key: name, value })));

/** Something held open in the primary for one worker: ended (rolled back) if that worker goes. */
interface Session {
  owner: string;
  end(commit: boolean): Promise<void>;
}

/** A transaction held open in the primary: the worker's calls run in it until it ends. */
interface OpenTransaction extends Session {
  tx: PhysicalTransaction;
}

/** A scan held open: the worker pulls its entries a batch at a time. */
interface OpenScan extends Session {
  next(): Promise<{ entries: StoredEntry[]; done: boolean }>;
}

/** A snapshot held open: its entries pulled as a scan's, its log and metadata read as of its time. */
interface OpenSnapshot extends OpenScan {
  snapshot: StoreSnapshot;
}

/** A replacement held open: the worker pushes its entries a batch at a time. */
interface OpenReplace extends Session {
  push(entries: StoredEntry[]): Promise<void>;
}

class Aborted extends Error {
  constructor() {
    super('storage session ended before it completed');
  }
}

/** Answers storage calls from the workers on the one opened `physical` (in the primary). */
export class PhysicalServer {
  private readonly sessions = new Map<string, OpenTransaction | OpenScan | OpenSnapshot | OpenReplace>();

  constructor(private readonly physical: Physical) {}

  serve(bus: Bus, subjectPrefix = 'svc'): Subscription {
    return bus.serve(storageSubject(subjectPrefix), 'storage', (msg) =>
      this.handle(msg).catch((err: unknown) => {
        // The kind travels with the messages (a bad key stays a 400 in the worker); any other
        // failure is a bus error, its message only.
        if (err instanceof ServiceError) return reply(encodeJson(err.errors), { [KIND_HEADER]: err.kind });
        throw err;
      }),
    );
  }

  /** Ends (rolls back) what `owner` left open: its process exited mid-way. */
  async abandon(owner: string): Promise<void> {
    const left = [...this.sessions].filter(([, session]) => session.owner === owner);
    await Promise.all(left.map(([id, session]) => (this.sessions.delete(id), session.end(false).catch(() => undefined))));
  }

  private async handle(msg: BusMessage): Promise<BusMessage> {
    const { op, key = '', session: id = '', owner = '' } = msg.headers as { op: Op; key?: string; session?: string; owner?: string };
    const store = id && (op === 'get' || op === 'put' || op === 'delete' || op === 'list' || op === 'lock') ? this.session<OpenTransaction>(id).tx : this.physical;
    switch (op) {
      case 'open':
        return reply(EMPTY);
      case 'get': {
        const value = await store.get(key);
        return value ? reply(value, { found: '1' }) : reply(EMPTY);
      }
      case 'put':
        await store.put(key, bytes(msg.payload));
        return reply(EMPTY);
      case 'delete':
        await store.delete(key);
        return reply(EMPTY);
      case 'list':
        return reply(encodeJson(await store.list(key)));
      case 'lock':
        await this.session<OpenTransaction>(id).tx.lock(key);
        return reply(EMPTY);
      case 'put-meta':
        await this.session<OpenTransaction>(id).tx.putMeta(key, msg.headers.absent ? null : bytes(msg.payload));
        return reply(EMPTY);
      case 'tx-begin':
        return reply(encodeJson(await this.beginTransaction(owner)));
      case 'scan-begin':
        return reply(encodeJson(await this.beginScan(owner)));
      case 'snapshot-begin':
        return reply(encodeJson(await this.beginSnapshot(owner)));
      case 'snapshot-meta':
        return reply(encodeJson(metaToWire(await this.session<OpenSnapshot>(id).snapshot.meta(key))));
      case 'snapshot-log': {
        const { idx, limit } = decodeJson<{ idx: number; limit: number }>(msg.payload);
        return reply(encodeJson(walToWire(await this.session<OpenSnapshot>(id).snapshot.entriesAfter(idx, limit))));
      }
      case 'log-set':
        await this.physical.log.setLogging(decodeJson<boolean>(msg.payload));
        return reply(EMPTY);
      case 'log-state':
        return reply(encodeJson(await this.physical.log.logging()));
      case 'log-last':
        return reply(encodeJson(await this.physical.log.lastIndex()));
      case 'log-after': {
        const { idx, limit } = decodeJson<{ idx: number; limit: number }>(msg.payload);
        return reply(encodeJson(walToWire(await this.physical.log.entriesAfter(idx, limit))));
      }
      case 'log-trim':
        await this.physical.log.trimThrough(decodeJson<number>(msg.payload));
        return reply(EMPTY);
      case 'log-import': {
        const { entries, head } = decodeJson<{ entries: WireWalEntry[]; head: LogHead }>(msg.payload);
        await this.physical.log.importLog(walFromWire(entries), head);
        return reply(EMPTY);
      }
      case 'meta-get': {
        const value = await this.physical.log.getMeta(key);
        return value ? reply(value, { found: '1' }) : reply(EMPTY);
      }
      case 'scan-next': {
        const { entries, done } = await this.session<OpenScan>(id).next();
        return reply(encodeJson({ entries: toWire(entries), done }));
      }
      case 'replace-begin':
        return reply(encodeJson(this.beginReplace(owner, new Set(decodeJson<string[]>(msg.payload)))));
      case 'replace-push':
        await this.session<OpenReplace>(id).push(fromWire(decodeJson<WireEntry[]>(msg.payload)));
        return reply(EMPTY);
      case 'tx-end':
      case 'scan-end':
      case 'replace-end': {
        const session = this.session(id);
        this.sessions.delete(id);
        await session.end(msg.headers.commit === '1');
        return reply(EMPTY);
      }
      default:
        throw new Error(`unknown storage call "${String(op)}"`);
    }
  }

  private session<T extends Session>(id: string): T {
    const session = this.sessions.get(id);
    if (!session) throw new Error('storage session is not open (it ended, or its worker restarted)');
    return session as unknown as T;
  }

  /** Starts a transaction and holds it open until its `tx-end`; resolves once it runs. */
  private beginTransaction(owner: string): Promise<string> {
    const id = randomUUID();
    return new Promise((started, failed) => {
      let finish!: (commit: boolean) => void;
      const outcome = this.physical.transaction(
        (tx) =>
          new Promise<void>((commit, rollback) => {
            finish = (ok) => (ok ? commit() : rollback(new Aborted()));
            this.sessions.set(id, { owner, tx, end: (ok) => (finish(ok), ok ? outcome : outcome.catch(ignoreAborted)) });
            started(id);
          }),
      );
      outcome.catch(failed);
    });
  }

  private beginScan(owner: string): Promise<string> {
    const id = randomUUID();
    return new Promise((started, failed) => {
      const outcome = this.physical.scan(
        (entries) =>
          new Promise<void>((finished) => {
            this.sessions.set(id, { owner, next: batchesOf(entries), end: () => (finished(), outcome) });
            started(id);
          }),
      );
      outcome.catch(failed);
    });
  }

  private beginSnapshot(owner: string): Promise<{ session: string; lastIndex: number }> {
    const id = randomUUID();
    return new Promise((started, failed) => {
      const outcome = this.physical.snapshot(
        (snapshot) =>
          new Promise<void>((finished) => {
            this.sessions.set(id, { owner, snapshot, next: batchesOf(snapshot.entries), end: () => (finished(), outcome) });
            started({ session: id, lastIndex: snapshot.lastIndex });
          }),
      );
      outcome.catch(failed);
    });
  }

  /** Feeds `replaceAll` the batches the worker pushes, one at a time (the next push waits). */
  private beginReplace(owner: string, keep: ReadonlySet<string>): string {
    const id = randomUUID();
    let offer: ((batch: StoredEntry[] | undefined) => void) | undefined;
    let wanted: () => void = () => undefined;
    let demand = new Promise<void>((resolve) => (wanted = resolve));
    let aborted = false;
    async function* batches(): AsyncIterable<StoredEntry> {
      for (;;) {
        const batch = await new Promise<StoredEntry[] | undefined>((resolve) => {
          offer = resolve;
          wanted();
        });
        if (aborted) throw new Aborted();
        if (!batch) return;
        yield* batch;
      }
    }
    const outcome = this.physical.replaceAll(batches(), keep);
    // A failure surfaces at the next push or at the end; until then it is held, not unhandled.
    outcome.catch(() => undefined);
    const handOver = async (batch: StoredEntry[] | undefined) => {
      await Promise.race([demand, outcome]);
      demand = new Promise<void>((resolve) => (wanted = resolve));
      offer!(batch);
    };
    this.sessions.set(id, {
      owner,
      push: (entries) => handOver(entries),
      end: async (commit) => {
        aborted = !commit;
        await handOver(undefined);
        await (commit ? outcome : outcome.catch(ignoreAborted));
      },
    });
    return id;
  }
}

/** Reads `entries` a bounded batch at a time. */
function batchesOf(entries: AsyncIterable<StoredEntry>): OpenScan['next'] {
  const iterator = entries[Symbol.asyncIterator]();
  return async () => {
    const batch: StoredEntry[] = [];
    while (batch.length < BATCH_ENTRIES) {
      const item = await iterator.next();
      if (item.done) return { entries: batch, done: true };
      batch.push(item.value);
    }
    return { entries: batch, done: false };
  };
}

function ignoreAborted(err: unknown): void {
  if (!(err instanceof Aborted)) throw err;
}

function reply(payload: Uint8Array, headers: Record<string, string> = {}): BusMessage {
  return { payload, headers };
}

/** The primary's storage as seen from a worker. */
export class BusPhysical implements Physical {
  readonly remote = true;

  /** `owner` names this process to the primary, which ends what it left open should it exit. */
  constructor(
    readonly kind: Physical['kind'],
    private readonly bus: Bus,
    private readonly subjectPrefix = 'svc',
    readonly owner: string = randomUUID(),
  ) {}

  /** The primary opened the store; this checks that it answers. */
  async open(): Promise<void> {
    await this.call({ op: 'open' });
  }

  async close(): Promise<void> {
    // The primary closes the store once every worker has stopped.
  }

  get(key: string): Promise<Buffer | null> {
    return this.getIn(key);
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.putIn(key, value);
  }

  delete(key: string): Promise<void> {
    return this.deleteIn(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.listIn(prefix);
  }

  /** As a transaction of the primary's store: a worker's round trips go to the primary, which is near. */
  writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    return writeIfUnchangedInTransaction(this, write);
  }

  readonly log: WriteAheadLog = {
    setLogging: async (on) => void (await this.call({ op: 'log-set' }, encodeJson(on))),
    logging: async () => decodeJson<boolean>((await this.call({ op: 'log-state' })).payload),
    lastIndex: async () => decodeJson<number>((await this.call({ op: 'log-last' })).payload),
    entriesAfter: async (idx, limit) => walFromWire(decodeJson<WireWalEntry[]>((await this.call({ op: 'log-after' }, encodeJson({ idx, limit }))).payload)),
    trimThrough: async (idx) => void (await this.call({ op: 'log-trim' }, encodeJson(idx))),
    getMeta: async (name) => {
      const answer = await this.call({ op: 'meta-get', key: name });
      return answer.headers.found ? bytes(answer.payload) : null;
    },
    importLog: async (entries, head) => void (await this.call({ op: 'log-import' }, encodeJson({ entries: walToWire(entries), head }))),
  };

  async transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    const session = decodeJson<string>((await this.call({ op: 'tx-begin' })).payload);
    let finished = false;
    const open = () => (finished ? Promise.reject(new Error(TRANSACTION_FINISHED)) : Promise.resolve());
    const tx: PhysicalTransaction = {
      get: (key) => open().then(() => this.getIn(key, session)),
      put: (key, value) => open().then(() => this.putIn(key, value, session)),
      delete: (key) => open().then(() => this.deleteIn(key, session)),
      list: (prefix) => open().then(() => this.listIn(prefix, session)),
      lock: (key) => open().then(async () => void (await this.call({ op: 'lock', key, session }))),
      putMeta: (name, value) => open().then(async () => void (await this.call({ op: 'put-meta', key: name, session, ...(value ? {} : { absent: '1' }) }, value ?? EMPTY))),
    };
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      finished = true;
      await this.call({ op: 'tx-end', session, commit: '0' }).catch(() => undefined);
      throw err;
    }
    finished = true;
    await this.call({ op: 'tx-end', session, commit: '1' });
    return result;
  }

  async scan<T>(consume: (entries: AsyncIterable<StoredEntry>) => Promise<T>): Promise<T> {
    const session = decodeJson<string>((await this.call({ op: 'scan-begin' })).payload);
    try {
      return await consume(this.pulled(session));
    } finally {
      await this.call({ op: 'scan-end', session });
    }
  }

  async snapshot<T>(consume: (snapshot: StoreSnapshot) => Promise<T>): Promise<T> {
    const { session, lastIndex } = decodeJson<{ session: string; lastIndex: number }>((await this.call({ op: 'snapshot-begin' })).payload);
    try {
      return await consume({
        entries: this.pulled(session),
        lastIndex,
        meta: async (prefix) => metaFromWire(decodeJson<WireEntry[]>((await this.call({ op: 'snapshot-meta', key: prefix, session })).payload)),
        entriesAfter: async (idx, limit) =>
          walFromWire(decodeJson<WireWalEntry[]>((await this.call({ op: 'snapshot-log', session }, encodeJson({ idx, limit }))).payload)),
      });
    } finally {
      await this.call({ op: 'scan-end', session });
    }
  }

  /** The entries of an open scan or snapshot, pulled from the primary a batch at a time. */
  private async *pulled(session: string): AsyncIterable<StoredEntry> {
    for (let done = false; !done; ) {
      const batch = decodeJson<{ entries: WireEntry[]; done: boolean }>((await this.call({ op: 'scan-next', session })).payload);
      done = batch.done;
      yield* fromWire(batch.entries);
    }
  }


  async replaceAll(entries: AsyncIterable<StoredEntry>, keep: ReadonlySet<string>): Promise<void> {
    const session = decodeJson<string>((await this.call({ op: 'replace-begin' }, encodeJson([...keep]))).payload);
    try {
      let batch: StoredEntry[] = [];
      for await (const entry of entries) {
        batch.push(entry);
        if (batch.length === BATCH_ENTRIES) {
          await this.call({ op: 'replace-push', session }, encodeJson(toWire(batch)));
          batch = [];
        }
      }
      if (batch.length > 0) await this.call({ op: 'replace-push', session }, encodeJson(toWire(batch)));
    } catch (err) {
      await this.call({ op: 'replace-end', session, commit: '0' }).catch(() => undefined);
      throw err;
    }
    await this.call({ op: 'replace-end', session, commit: '1' });
  }

  private async getIn(key: string, session?: string): Promise<Buffer | null> {
    const answer = await this.call({ op: 'get', key, session });
    return answer.headers.found ? bytes(answer.payload) : null;
  }

  private async putIn(key: string, value: Buffer, session?: string): Promise<void> {
    await this.call({ op: 'put', key, session }, value);
  }

  private async deleteIn(key: string, session?: string): Promise<void> {
    await this.call({ op: 'delete', key, session });
  }

  private async listIn(prefix: string, session?: string): Promise<string[]> {
    return decodeJson<string[]>((await this.call({ op: 'list', key: prefix, session })).payload);
  }

  private async call(headers: { op: Op; key?: string; session?: string; commit?: string; absent?: string }, payload: Uint8Array = EMPTY): Promise<BusMessage> {
    const defined = Object.fromEntries(Object.entries({ ...headers, owner: this.owner }).filter(([, value]) => value !== undefined)) as Record<string, string>;
    // A storage call waits as long as the store takes (a transaction waits for the one before it).
    const answer = await this.bus.request(storageSubject(this.subjectPrefix), payload, { headers: defined, timeoutMs: STORAGE_CALL_TIMEOUT_MS });
    const kind = answer.headers[KIND_HEADER];
    if (kind) throw new ServiceError(kind as ErrorKind, decodeJson<string[]>(answer.payload));
    return answer;
  }
}

/** Long enough for a large statement on embedded storage on a busy machine; a lost primary ends the worker sooner. */
const STORAGE_CALL_TIMEOUT_MS = 120_000;
