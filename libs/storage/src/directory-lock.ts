import { chmodSync, linkSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'svc.lock';

interface LockOwner {
  pid: number;
  hostname: string;
}

/**
 * Exclusive use of a data directory by one server process (or `svc operator migrate`), as
 * PostgreSQL's postmaster.pid: a lock file created with O_EXCL names its owner. A lock left by a
 * process that is gone is stale and taken over; so is one naming this very process, since pids
 * repeat across container restarts.
 */
export class DirectoryLock {
  private constructor(private readonly file: string) {}

  /** Takes the directory or throws an error that says who holds it. */
  static acquire(directory: string): DirectoryLock {
    const file = join(directory, LOCK_FILE);
    // Written aside and linked into place, so a lock file is never seen empty.
    const draft = `${file}.${process.pid}`;
    writeFileSync(draft, JSON.stringify({ pid: process.pid, hostname: hostname() } satisfies LockOwner), { mode: 0o600 });
    try {
      // Bounded: a lock that keeps reappearing is held by a live process, which ends the loop.
      for (let attempt = 0; attempt < 10; attempt++) {
        if (tryLink(draft, file)) return new DirectoryLock(file);
        const owner = readOwner(file);
        if (owner && isLive(owner)) {
          throw new Error(
            `data directory ${directory} is in use by another server or storage migration (pid ${owner.pid} on ${owner.hostname}); ` +
              `stop it first, or remove ${file} if no process uses the directory`,
          );
        }
        removeIfPresent(file);
      }
      throw new Error(`data directory ${directory}: cannot create ${file}`);
    } finally {
      removeIfPresent(draft);
    }
  }

  /** In a worker of the server that holds the directory: throws unless the lock names that live process. */
  static requireHeldBy(directory: string, pid: number): void {
    const owner = readOwner(join(directory, LOCK_FILE));
    if (owner?.pid !== pid || owner.hostname !== hostname() || !isLive(owner, true)) {
      throw new Error(`data directory ${directory} is not held by this worker's server (pid ${pid})`);
    }
  }

  /** Whether a server left the directory without releasing it: its lock names a process that is gone. */
  static abandoned(directory: string): boolean {
    const owner = readOwner(join(directory, LOCK_FILE));
    return owner !== undefined && !isLive(owner);
  }

  release(): void {
    removeIfPresent(this.file);
  }
}

function tryLink(draft: string, file: string): boolean {
  try {
    linkSync(draft, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** The lock's owner, or undefined when the file is gone or unreadable. */
function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' && typeof owner.hostname === 'string' ? { pid: owner.pid, hostname: owner.hostname } : undefined;
  } catch {
    return undefined;
  }
}

/** A lock from another host cannot be checked and counts as held; one naming this process counts as held only when `own` says so. */
function isLive(owner: LockOwner, own = false): boolean {
  if (owner.hostname !== hostname()) return true;
  if (owner.pid === process.pid) return own;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeIfPresent(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Owner-only modes for a data directory and everything in it (data written by earlier versions was not). */
export function makePrivate(directory: string): void {
  chmodSync(directory, 0o700);
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory()) chmodSync(join(entry.parentPath, entry.name), 0o700);
    else if (entry.isFile()) chmodSync(join(entry.parentPath, entry.name), 0o600);
  }
}
