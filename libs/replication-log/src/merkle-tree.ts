import { createHash } from 'node:crypto';

/**
 * One Merkle tree over storage keys: 65,536 buckets, chosen by the first 16 bits of SHA-256 of
 * the key, grouped as 256 pages of 256 sub-pages (a sub-page is one bucket). A bucket's hash
 * covers its keys and the SHA-256 of their stored values; a page's hash covers its 256 bucket
 * hashes; the root covers the 256 page hashes. Two stores with equal content have equal roots,
 * and a difference is found page by page, then bucket by bucket, then key by key.
 */
export const PAGES = 256;
export const SUBPAGES = 256;

/** Where a key sits in a tree. */
export interface KeyPosition {
  page: number;
  subpage: number;
}

/** A key and the hex SHA-256 of its stored value, as a bucket lists it. */
export interface KeyHash {
  key: string;
  hash: string;
}

const EMPTY_BUCKET = createHash('sha256').digest();

export function positionOf(key: string): KeyPosition {
  const digest = createHash('sha256').update(key).digest();
  return { page: digest[0], subpage: digest[1] };
}

export function valueHash(value: Buffer): string {
  return createHash('sha256').update(value).digest('hex');
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function hashBucket(bucket: ReadonlyMap<string, string> | undefined): Buffer {
  if (!bucket || bucket.size === 0) return EMPTY_BUCKET;
  const hash = createHash('sha256');
  for (const key of [...bucket.keys()].sort(compareKeys)) {
    // Length-prefixed so no two (key, value) lists hash the same bytes.
    const keyBytes = Buffer.from(key);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(keyBytes.length);
    hash.update(length).update(keyBytes).update(Buffer.from(bucket.get(key)!, 'hex'));
  }
  return hash.digest();
}

/** A page's stored form: its keys and value hashes, sorted by key (JSON, so it can be read by hand). */
export function encodePage(entries: readonly KeyHash[]): Buffer {
  return Buffer.from(JSON.stringify(entries.map(({ key, hash }) => [key, hash])));
}

/** Reads a stored page; unreadable bytes count as a page whose every key is wrong (it is corrupt). */
export function decodePage(bytes: Buffer): KeyHash[] | undefined {
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    if (!Array.isArray(parsed)) return undefined;
    const entries: KeyHash[] = [];
    for (const item of parsed) {
      if (!Array.isArray(item) || typeof item[0] !== 'string' || typeof item[1] !== 'string' || !/^[0-9a-f]{64}$/.test(item[1])) return undefined;
      entries.push({ key: item[0], hash: item[1] });
    }
    return entries;
  } catch {
    return undefined;
  }
}

/** The tree in memory, hashes computed when asked and kept until a key below them changes. */
export class MerkleTree {
  private readonly buckets: (Map<string, string> | undefined)[] = new Array(PAGES * SUBPAGES);
  private readonly bucketHashes: (Buffer | undefined)[] = new Array(PAGES * SUBPAGES);
  private readonly pageHashes: (Buffer | undefined)[] = new Array(PAGES);
  private root: Buffer | undefined;
  /** Pages changed since `takeDirtyPages` last ran. */
  private readonly dirty = new Set<number>();

  /** Sets `key`'s value hash (hex), or removes the key when `hash` is null. */
  set(key: string, hash: string | null): void {
    const { page, subpage } = positionOf(key);
    const slot = page * SUBPAGES + subpage;
    let bucket = this.buckets[slot];
    if (hash === null) {
      if (!bucket?.delete(key)) return;
    } else {
      if (bucket?.get(key) === hash) return;
      bucket ??= this.buckets[slot] = new Map();
      bucket.set(key, hash);
    }
    this.bucketHashes[slot] = undefined;
    this.pageHashes[page] = undefined;
    this.root = undefined;
    this.dirty.add(page);
  }

  get(key: string): string | undefined {
    const { page, subpage } = positionOf(key);
    return this.buckets[page * SUBPAGES + subpage]?.get(key);
  }

  bucketHash(page: number, subpage: number): string {
    return this.bucketDigest(page * SUBPAGES + subpage).toString('hex');
  }

  pageHash(page: number): string {
    return this.pageDigest(page).toString('hex');
  }

  rootHash(): string {
    this.root ??= createHash('sha256')
      .update(Buffer.concat(Array.from({ length: PAGES }, (_, page) => this.pageDigest(page))))
      .digest();
    return this.root.toString('hex');
  }

  /** The keys of one bucket with their value hashes, sorted by key. */
  bucketEntries(page: number, subpage: number): KeyHash[] {
    const bucket = this.buckets[page * SUBPAGES + subpage];
    if (!bucket) return [];
    return [...bucket.keys()].sort(compareKeys).map((key) => ({ key, hash: bucket.get(key)! }));
  }

  /** The keys of one page, sorted by key: what `encodePage` stores. */
  pageEntries(page: number): KeyHash[] {
    return Array.from({ length: SUBPAGES }, (_, subpage) => this.bucketEntries(page, subpage))
      .flat()
      .sort((a, b) => compareKeys(a.key, b.key));
  }

  /** Every key with its value hash, in no particular order. */
  *entries(): IterableIterator<KeyHash> {
    for (const bucket of this.buckets) {
      for (const [key, hash] of bucket ?? []) yield { key, hash };
    }
  }

  /** A copy holding only the keys `keep` accepts. */
  filtered(keep: (key: string) => boolean): MerkleTree {
    const copy = new MerkleTree();
    for (const bucket of this.buckets) {
      for (const [key, hash] of bucket ?? []) if (keep(key)) copy.set(key, hash);
    }
    return copy;
  }

  /** Replaces one page's keys (as loaded from its stored form). */
  loadPage(page: number, entries: readonly KeyHash[]): void {
    for (let subpage = 0; subpage < SUBPAGES; subpage++) {
      this.buckets[page * SUBPAGES + subpage] = undefined;
      this.bucketHashes[page * SUBPAGES + subpage] = undefined;
    }
    for (const { key, hash } of entries) this.set(key, hash);
    this.pageHashes[page] = undefined;
    this.root = undefined;
    // Loaded as stored: nothing to write back.
    this.dirty.delete(page);
  }

  /** Pages changed since the last call, which a flush must write. */
  takeDirtyPages(): number[] {
    const pages = [...this.dirty].sort((a, b) => a - b);
    this.dirty.clear();
    return pages;
  }

  /** Marks pages to be written again (after a flush that failed). */
  markDirty(pages: readonly number[]): void {
    for (const page of pages) this.dirty.add(page);
  }

  private bucketDigest(slot: number): Buffer {
    return (this.bucketHashes[slot] ??= hashBucket(this.buckets[slot]));
  }

  private pageDigest(page: number): Buffer {
    this.pageHashes[page] ??= createHash('sha256')
      .update(Buffer.concat(Array.from({ length: SUBPAGES }, (_, subpage) => this.bucketDigest(page * SUBPAGES + subpage))))
      .digest();
    return this.pageHashes[page];
  }
}
