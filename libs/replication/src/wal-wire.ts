import type { WalEntry } from '@svc/storage';

/**
 * Calls of the cluster link that carry replicated storage, and the JSON form of what they carry:
 * values are the stored bytes (barrier ciphertext), base64; nothing is decrypted to travel.
 */
export const LINK_PATHS = {
  wal: '/v1/replication/wal',
  keyring: '/v1/replication/keyring',
  pageHashes: '/v1/replication/merkle/pages',
  bucketHashes: '/v1/replication/merkle/buckets',
  bucketKeys: '/v1/replication/merkle/keys',
  entries: '/v1/replication/merkle/entries',
  /** A write a performance secondary forwards to its primary. */
  forward: '/v1/replication/forward',
} as const;

export interface WireEntry {
  idx: number;
  op: WalEntry['op'];
  key: string;
  value: string | null;
}

export function encodeValue(value: Buffer | null): string | null {
  return value === null ? null : value.toString('base64');
}

export function decodeValue(value: unknown): Buffer | null {
  if (value === null) return null;
  if (typeof value !== 'string') throw new Error('a replicated value is not base64 text');
  return Buffer.from(value, 'base64');
}

export function encodeEntries(entries: readonly WalEntry[]): WireEntry[] {
  return entries.map(({ idx, op, key, value }) => ({ idx, op, key, value: encodeValue(value) }));
}

/** The primary's entries, checked: they came over the network. */
export function decodeEntries(value: unknown): WalEntry[] {
  if (!Array.isArray(value)) throw new Error('the primary answered without log entries');
  return value.map((item: Partial<WireEntry>) => {
    if (!Number.isInteger(item.idx) || typeof item.key !== 'string' || (item.op !== 'put' && item.op !== 'delete' && item.op !== 'reset')) {
      throw new Error('the primary answered a malformed log entry');
    }
    return { idx: item.idx!, op: item.op, key: item.key, value: decodeValue(item.value ?? null) };
  });
}
