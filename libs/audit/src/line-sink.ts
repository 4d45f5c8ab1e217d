import { close, closeSync, existsSync, fchmodSync, mkdirSync, openSync, write } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { Mutex } from 'async-mutex';

const writeToFd = promisify(write);
const closeFd = promisify(close);

/** Where a device's formatted lines go. Each `write` receives whole lines only. */
export interface LineSink {
  write(text: string): Promise<void>;
  /** Reopens the underlying file, for log rotation. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

export const discardSink: LineSink = {
  write: async () => undefined,
  reopen: async () => undefined,
  close: async () => undefined,
};

export const stdoutSink: LineSink = {
  write: (text) =>
    new Promise<void>((resolve, reject) => {
      process.stdout.write(text, (err) => (err ? reject(err) : resolve()));
    }),
  reopen: async () => undefined,
  // stdout belongs to the process, not to the device.
  close: async () => undefined,
};

/** Thrown when the audit file cannot be opened; the message names the file and the reason. */
export class AuditFileOpenError extends Error {
  constructor(filePath: string, cause: unknown) {
    super(`cannot open "${filePath}" for appending: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'AuditFileOpenError';
  }
}

/**
 * Appends lines to a file opened with O_APPEND. Each line is one write(2) of the whole buffer, so
 * lines from other processes sharing the file land between ours, never inside them; the mutex does
 * the same for concurrent requests in this process (and covers a short write finishing in a loop).
 */
export class AppendFileSink implements LineSink {
  private fd: number | null;
  private readonly mutex = new Mutex();

  /** `mode` 0 creates a missing file as 0600 and never changes an existing file's mode. */
  constructor(
    private readonly filePath: string,
    private readonly mode: number,
  ) {
    this.fd = this.open();
  }

  write(text: string): Promise<void> {
    return this.mutex.runExclusive(async () => {
      const fd = this.currentFd();
      const bytes = Buffer.from(text, 'utf8');
      let offset = 0;
      while (offset < bytes.length) {
        const { bytesWritten } = await writeToFd(fd, bytes, offset, bytes.length - offset);
        offset += bytesWritten;
      }
    });
  }

  reopen(): Promise<void> {
    return this.mutex.runExclusive(async () => {
      const previous = this.currentFd();
      this.fd = this.open();
      await closeFd(previous);
    });
  }

  close(): Promise<void> {
    return this.mutex.runExclusive(async () => {
      if (this.fd === null) return;
      const fd = this.fd;
      this.fd = null;
      await closeFd(fd);
    });
  }

  private currentFd(): number {
    if (this.fd === null) throw new Error(`audit file "${this.filePath}" is closed`);
    return this.fd;
  }

  private open(): number {
    let fd: number | undefined;
    try {
      // A missing directory is made, private to the server's user.
      const directory = dirname(this.filePath);
      if (!existsSync(directory)) mkdirSync(directory, { recursive: true, mode: 0o700 });
      fd = openSync(this.filePath, 'a', this.mode || 0o600);
      // The umask may have narrowed the mode of a new file, and an existing file keeps its own.
      if (this.mode !== 0) fchmodSync(fd, this.mode);
      return fd;
    } catch (err) {
      if (fd !== undefined) closeSync(fd);
      throw new AuditFileOpenError(this.filePath, err);
    }
  }
}
