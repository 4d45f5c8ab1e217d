import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { extract, pack } from 'tar-stream';
import { ServiceError } from '@svc/api-contract';
import { BarrierCipher, type Keyring, type Physical, type StoredEntry } from '@svc/storage';

/**
 * A snapshot archive, shaped as Vault's: gzip(tar(meta.json, state.bin, SHA256SUMS,
 * SHA256SUMS.sealed)).
 *
 * - `state.bin`: every physical entry (barrier ciphertext, and the seal's own entries, which are
 *   ciphertext or a public configuration) as records `| key length u32 BE | key | value length
 *   u32 BE | value |`. Nothing in it is plaintext of a secret.
 * - `SHA256SUMS`: `<hex>  <file>` lines for meta.json and state.bin.
 * - `SHA256SUMS.sealed`: SHA256SUMS encrypted by the barrier's keyring (its active term, the file
 *   name as associated data). Only an installation holding that keyring term opens it, which is
 *   how a restore tells its own snapshots from another installation's.
 */
export const SNAPSHOT_FILES = { meta: 'meta.json', state: 'state.bin', sums: 'SHA256SUMS', sealedSums: 'SHA256SUMS.sealed' } as const;

export const SNAPSHOT_FORMAT_VERSION = 1;

export interface SnapshotMeta {
  version: number;
  id: string;
  created_at: string;
  storage_type: string;
  entries: number;
  state_bytes: number;
}

/** Associated data of the sealed checksum file: it cannot be mistaken for a stored value. */
const SEALED_SUMS_PATH = `snapshot/${SNAPSHOT_FILES.sealedSums}`;
/** The small members (meta.json and the checksum files) are read into memory up to this size. */
const MAX_SMALL_MEMBER_BYTES = 64 * 1024;
const LENGTH_BYTES = 4;

/** A finished archive in a private temporary directory; `dispose` deletes it. */
export interface SnapshotFile {
  path: string;
  size: number;
  meta: SnapshotMeta;
  dispose(): Promise<void>;
}

async function privateDirectory(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'svc-snapshot-'));
}

/** Writes `chunk`, waiting for the stream to drain when its buffer is full (constant memory). */
async function write(out: Writable, chunk: Buffer): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

async function closeStream(out: Writable): Promise<void> {
  out.end();
  await once(out, 'finish');
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function sumsText(sums: Record<string, string>): Buffer {
  return Buffer.from(Object.entries(sums).map(([file, hex]) => `${hex}  ${file}\n`).join(''), 'utf8');
}

/**
 * Takes a snapshot of `physical` as of one point in time. The entries go to a temporary
 * `state.bin` first (tar needs each member's size before its bytes, and the embedded store is
 * held only as long as this copy takes, not as long as a slow reader takes); then the archive is
 * written next to it. Memory stays constant whatever the size of the store.
 */
export async function createSnapshot(physical: Physical, keyring: Keyring): Promise<SnapshotFile> {
  const directory = await privateDirectory();
  const dispose = () => rm(directory, { recursive: true, force: true });
  try {
    const statePath = join(directory, SNAPSHOT_FILES.state);
    const stateHash = createHash('sha256');
    const counted = await physical.scan(async (entries) => {
      const out = createWriteStream(statePath, { mode: 0o600 });
      let count = 0;
      let bytes = 0;
      try {
        for await (const entry of entries) {
          const record = encodeRecord(entry);
          stateHash.update(record);
          await write(out, record);
          count++;
          bytes += record.length;
        }
      } finally {
        await closeStream(out);
      }
      return { count, bytes };
    });
    const meta: SnapshotMeta = {
      version: SNAPSHOT_FORMAT_VERSION,
      id: randomUUID(),
      created_at: new Date().toISOString(),
      storage_type: physical.kind,
      entries: counted.count,
      state_bytes: counted.bytes,
    };
    const metaBytes = Buffer.from(JSON.stringify(meta), 'utf8');
    const sums = sumsText({ [SNAPSHOT_FILES.meta]: sha256Hex(metaBytes), [SNAPSHOT_FILES.state]: stateHash.digest('hex') });
    const sealed = new BarrierCipher(keyring).encrypt(SEALED_SUMS_PATH, sums);

    const archivePath = join(directory, 'snapshot.snap');
    const tar = pack();
    const written = pipeline(tar, createGzip(), createWriteStream(archivePath, { mode: 0o600 }));
    tar.entry({ name: SNAPSHOT_FILES.meta, mode: 0o600 }, metaBytes);
    const state = tar.entry({ name: SNAPSHOT_FILES.state, size: counted.bytes, mode: 0o600 });
    await pipeline(createReadStream(statePath), state);
    tar.entry({ name: SNAPSHOT_FILES.sums, mode: 0o600 }, sums);
    tar.entry({ name: SNAPSHOT_FILES.sealedSums, mode: 0o600 }, sealed);
    tar.finalize();
    await written;
    await rm(statePath);
    return { path: archivePath, size: (await stat(archivePath)).size, meta, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function encodeRecord({ key, value }: StoredEntry): Buffer {
  const keyBytes = Buffer.from(key, 'utf8');
  const record = Buffer.allocUnsafe(LENGTH_BYTES * 2 + keyBytes.length + value.length);
  record.writeUInt32BE(keyBytes.length, 0);
  keyBytes.copy(record, LENGTH_BYTES);
  record.writeUInt32BE(value.length, LENGTH_BYTES + keyBytes.length);
  value.copy(record, LENGTH_BYTES * 2 + keyBytes.length);
  return record;
}

/** A received snapshot, checked against its checksums, with its entries in a temporary file. */
export interface OpenedSnapshot {
  meta: SnapshotMeta;
  /** Whether the sealed checksum file opened with this installation's keyring: a snapshot of this installation. */
  sameInstallation: boolean;
  /** The entries, read from the temporary file (may be iterated once per call). */
  entries(): AsyncIterable<StoredEntry>;
  dispose(): Promise<void>;
}

const corrupt = (detail: string) => ServiceError.badRequest(`invalid snapshot: ${detail}`);

/**
 * Reads an uploaded archive (`input`, gzip'd tar) into a private temporary directory and checks
 * it: the members are the four of a snapshot, the checksums match, and the checksum file's sealed
 * copy is tried with `keyring`. Anything malformed is a 400 naming what is wrong; nothing is kept.
 */
export async function openSnapshot(input: Readable, keyring: Keyring): Promise<OpenedSnapshot> {
  const directory = await privateDirectory();
  const dispose = () => rm(directory, { recursive: true, force: true });
  try {
    const statePath = join(directory, SNAPSHOT_FILES.state);
    const small = new Map<string, Buffer>();
    let stateSum: string | undefined;
    const tar = extract();
    tar.on('entry', (header, stream, next) => {
      const done = (err?: unknown) => (err ? tar.destroy(err instanceof Error ? err : new Error(String(err))) : next());
      if (header.name === SNAPSHOT_FILES.state && stateSum === undefined) {
        const hash = createHash('sha256');
        stream.on('data', (chunk: unknown) => hash.update(chunk as Buffer));
        pipeline(stream, createWriteStream(statePath, { mode: 0o600 })).then(() => {
          stateSum = hash.digest('hex');
          done();
        }, done);
      } else if (Object.values(SNAPSHOT_FILES).includes(header.name as never) && !small.has(header.name) && (header.size ?? 0) <= MAX_SMALL_MEMBER_BYTES) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
        stream.on('end', () => {
          small.set(header.name, Buffer.concat(chunks));
          done();
        });
        stream.on('error', done);
      } else {
        // Destroying the extractor errors the member's stream too: the refusal is the error reported.
        stream.on('error', () => undefined);
        stream.resume();
        done(corrupt(`unexpected member ${JSON.stringify(header.name)} in the archive`));
      }
    });
    // Piped rather than part of the pipeline: a malformed archive must not destroy the upload's
    // connection, over which the refusal is still to be answered.
    const source = input.pipe(new PassThrough());
    try {
      await pipeline(source, createGunzip(), tar);
    } catch (error) {
      input.unpipe(source);
      if (error instanceof ServiceError) throw error;
      throw corrupt('the body is not a gzip-compressed tar archive of a snapshot, or it is truncated');
    }
    const member = (name: string): Buffer => {
      const bytes = small.get(name);
      if (!bytes) throw corrupt(`the archive has no ${name}`);
      return bytes;
    };
    const sums = member(SNAPSHOT_FILES.sums);
    if (stateSum === undefined) throw corrupt(`the archive has no ${SNAPSHOT_FILES.state}`);
    const metaBytes = member(SNAPSHOT_FILES.meta);
    const expected = sumsText({ [SNAPSHOT_FILES.meta]: sha256Hex(metaBytes), [SNAPSHOT_FILES.state]: stateSum });
    if (!expected.equals(sums)) throw corrupt('the checksums in SHA256SUMS do not match the archive (altered or damaged)');
    const meta = parseMeta(metaBytes);
    let sameInstallation: boolean;
    try {
      sameInstallation = new BarrierCipher(keyring).decrypt(SEALED_SUMS_PATH, member(SNAPSHOT_FILES.sealedSums)).equals(sums);
    } catch {
      sameInstallation = false;
    }
    return { meta, sameInstallation, entries: () => readRecords(statePath), dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function parseMeta(bytes: Buffer): SnapshotMeta {
  let meta: SnapshotMeta;
  try {
    meta = JSON.parse(bytes.toString('utf8')) as SnapshotMeta;
  } catch {
    throw corrupt(`${SNAPSHOT_FILES.meta} is not JSON`);
  }
  if (meta?.version !== SNAPSHOT_FORMAT_VERSION) throw corrupt(`format version ${String(meta?.version)} is not supported (expected ${SNAPSHOT_FORMAT_VERSION})`);
  return meta;
}

/** The records of a state.bin file, read sequentially in chunks. */
async function* readRecords(path: string): AsyncGenerator<StoredEntry> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let offset = 0;
    for (;;) {
      const record = decodeRecord(pending, offset);
      if (!record) break;
      yield record.entry;
      offset = record.end;
    }
    pending = pending.subarray(offset);
  }
  if (pending.length > 0) throw corrupt(`${SNAPSHOT_FILES.state} ends in the middle of a record`);
}

function decodeRecord(buffer: Buffer, offset: number): { entry: StoredEntry; end: number } | undefined {
  if (buffer.length - offset < LENGTH_BYTES) return undefined;
  const keyEnd = offset + LENGTH_BYTES + buffer.readUInt32BE(offset);
  if (buffer.length < keyEnd + LENGTH_BYTES) return undefined;
  const end = keyEnd + LENGTH_BYTES + buffer.readUInt32BE(keyEnd);
  if (buffer.length < end) return undefined;
  const key = buffer.toString('utf8', offset + LENGTH_BYTES, keyEnd);
  // A copy: the chunk it came from is dropped once its records are read.
  return { entry: { key, value: Buffer.from(buffer.subarray(keyEnd + LENGTH_BYTES, end)) }, end };
}
