import { hash, randomUUID } from 'node:crypto';
import { readJson, writeJson, type KeyValueStore, type Transaction } from '@svc/storage';
import type { SyncStatus } from './model';

/**
 * The sync outbox of a KV version 2 mount, kept inside the mount's own storage so that a write of
 * an associated secret and its queue entry commit in the same transaction:
 *
 *   sync/associated/<sha256(path)>   the destinations (`<type>/<name>`) a secret is associated with
 *   sync/queue/<sha256(path)>        the one pending entry of that secret
 *
 * A secret has at most one entry: a later write replaces the entry's data and change id, so the
 * newest value is the one synced (order per secret is kept because only the latest state is ever
 * sent). The sync worker removes an entry only when its change id is still the one it synced.
 */
export const QUEUE_PREFIX = 'sync/queue/';
const MARKER_PREFIX = 'sync/associated/';

export interface AssociationMarker {
  path: string;
  destinations: string[];
}

export interface QueueEntry {
  path: string;
  /** New with every change; the worker deletes the entry only if no newer change replaced it. */
  change: string;
  /** The secret as it stands (its latest version's data), null when it has none (deleted or destroyed). */
  data: Record<string, unknown> | null;
  /** Destinations to bring up to date with `data`. */
  targets: string[];
  /** Destinations the secret was unassociated from: its provider copies are to be deleted. */
  removals: string[];
  /**
   * Destinations whose last attempt failed: how many attempts failed in a row, and the time (ms)
   * before which the next one does not run. Kept across changes, so a provider that is down is
   * not called again at every write; `set` and `remove` clear it for their destination.
   */
  backoff?: Record<string, { attempts: number; not_before: number }>;
  /** When the oldest change this entry carries was made (ms), for the sync lag. */
  enqueued_at: number;
}

export function secretHash(path: string): string {
  return hash('sha256', path, 'hex');
}

/** The outbox keys of a secret, from the hash of its path (secretHash). */
const queueKeyOfHash = (hashed: string): string => QUEUE_PREFIX + hashed;
const markerKeyOfHash = (hashed: string): string => MARKER_PREFIX + hashed;

export function queueKey(path: string): string {
  return queueKeyOfHash(secretHash(path));
}

function markerKey(path: string): string {
  return markerKeyOfHash(secretHash(path));
}

/**
 * What a conditional write of a secret (ConditionalWrite) must lock, and find absent, to owe the
 * sync queue nothing: no association marker and no pending entry, under the queue's lock, which
 * associating takes too. A secret that syncs fails the check; its writer then takes the
 * transaction that queues the change (recordSecretChange).
 */
export function unsyncedSecret(path: string): { lock: string; absent: string[] } {
  const hashed = secretHash(path);
  const queue = queueKeyOfHash(hashed);
  return { lock: queue, absent: [markerKeyOfHash(hashed), queue] };
}

export function readMarker(store: KeyValueStore, path: string): Promise<AssociationMarker | null> {
  return readJson<AssociationMarker>(store, markerKey(path));
}

export function readEntry(store: KeyValueStore, key: string): Promise<QueueEntry | null> {
  return readJson<QueueEntry>(store, key);
}

export function writeEntry(store: KeyValueStore, entry: QueueEntry): Promise<void> {
  return writeJson(store, queueKey(entry.path), entry);
}

function newEntry(path: string, data: Record<string, unknown> | null, now: number): QueueEntry {
  return { path, change: randomUUID(), data, targets: [], removals: [], enqueued_at: now };
}

/** The destinations of an entry whose sync (or removal) may run at `now`. */
export function dueDestinations(entry: QueueEntry, now: number): string[] {
  return [...entry.removals, ...entry.targets].filter((destination) => (entry.backoff?.[destination]?.not_before ?? 0) <= now);
}

/**
 * An association's status as its readers see it. The worker records SYNCED (or UNSYNCED) once it
 * has written a change; a newer change still queued for the destination means the provider does
 * not hold the latest version yet, which reads PENDING.
 */
export function currentStatus(recorded: SyncStatus, queued: QueueEntry | null, destination: string): SyncStatus {
  return (recorded === 'SYNCED' || recorded === 'UNSYNCED') && queued?.targets.includes(destination) ? 'PENDING' : recorded;
}

/** `set` and `remove` ask for an attempt now, whatever failed before. */
function withoutBackoff(entry: QueueEntry, destination: string): QueueEntry {
  const backoff = { ...entry.backoff };
  delete backoff[destination];
  return { ...entry, backoff };
}

/**
 * Called by the KV engine inside the transaction of every change to a version 2 secret (write,
 * patch, delete, undelete, destroy, metadata delete), holding the secret's lock. Associated
 * secrets (and secrets with removals still pending) get their entry replaced with `current()`,
 * the secret as it now stands; any other secret costs one read.
 */
export async function recordSecretChange(tx: Transaction, path: string, current: () => Promise<Record<string, unknown> | null>): Promise<void> {
  const key = queueKey(path);
  await tx.lock(key);
  const [marker, pending] = await Promise.all([readMarker(tx, path), readEntry(tx, key)]);
  if (!marker && !pending) return;
  const now = Date.now();
  const entry = newEntry(path, await current(), pending?.enqueued_at ?? now);
  entry.targets = marker?.destinations ?? [];
  entry.removals = pending?.removals ?? [];
  entry.backoff = pending?.backoff;
  await writeEntry(tx, entry);
}

/**
 * Step one of an association (`set`): from now on every change of the secret is queued for
 * `destination`. Then the caller reads the secret and queues its first sync with `queueFirstSync`.
 */
export async function markAssociated(tx: Transaction, path: string, destination: string): Promise<void> {
  await tx.lock(queueKey(path));
  const marker = (await readMarker(tx, path)) ?? { path, destinations: [] };
  if (!marker.destinations.includes(destination)) marker.destinations.push(destination);
  await writeJson(tx, markerKey(path), marker);
}

/**
 * Step two of `set`: queues a sync of `data` (read after `markAssociated`) to `destination`. An
 * entry already there was written by a change made since the mark, so its data is newer and is kept.
 */
export async function queueFirstSync(tx: Transaction, path: string, destination: string, data: Record<string, unknown>): Promise<void> {
  const key = queueKey(path);
  await tx.lock(key);
  const entry = (await readEntry(tx, key)) ?? newEntry(path, data, Date.now());
  entry.targets = [...new Set([...entry.targets, destination])];
  entry.removals = entry.removals.filter((id) => id !== destination);
  await writeEntry(tx, withoutBackoff(entry, destination));
}

/** `remove`: no more changes go to `destination`, and its copy of the secret is queued for deletion. */
export async function queueRemoval(tx: Transaction, path: string, destination: string): Promise<void> {
  const key = queueKey(path);
  await tx.lock(key);
  const marker = await readMarker(tx, path);
  if (marker) {
    marker.destinations = marker.destinations.filter((id) => id !== destination);
    if (marker.destinations.length === 0) await tx.delete(markerKey(path));
    else await writeJson(tx, markerKey(path), marker);
  }
  const entry = (await readEntry(tx, key)) ?? newEntry(path, null, Date.now());
  entry.targets = entry.targets.filter((id) => id !== destination);
  entry.removals = [...new Set([...entry.removals, destination])];
  await writeEntry(tx, withoutBackoff(entry, destination));
}
