import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryLock, LOCK_FILE } from './directory-lock';

describe('DirectoryLock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const writeOwner = (pid: number, host = hostname()) => writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, hostname: host }));

  test('takes a free directory with a private lock file naming this process, and gives it back', () => {
    const lock = DirectoryLock.acquire(dir);
    const file = join(dir, LOCK_FILE);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ pid: process.pid, hostname: hostname() });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    lock.release();
    expect(existsSync(file)).toBe(false);
    DirectoryLock.acquire(dir).release();
  });

  test('refuses a directory held by a live process, naming it and the way out', () => {
    writeOwner(process.ppid);
    expect(() => DirectoryLock.acquire(dir)).toThrow(
      `data directory ${dir} is in use by another server or storage migration (pid ${process.ppid} on ${hostname()}); stop it first, or remove ${join(dir, LOCK_FILE)} if no process uses the directory`,
    );
  });

  test('a lock from another host counts as held', () => {
    writeOwner(process.pid, 'some-other-host');
    expect(() => DirectoryLock.acquire(dir)).toThrow(/pid \d+ on some-other-host/);
  });

  test.each([
    ['a process that has exited', () => spawnSync(process.execPath, ['-e', '0']).pid],
    ['this very process (pids repeat across container restarts)', () => process.pid],
  ])('takes over a stale lock left by %s', (_, pid) => {
    writeOwner(pid());
    const lock = DirectoryLock.acquire(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  test('takes over a lock file that is unreadable', () => {
    writeFileSync(join(dir, LOCK_FILE), 'garbage');
    DirectoryLock.acquire(dir).release();
  });
});
