/**
 * Runs static-role rotations at their due times inside this process, so periods shorter than the
 * core's one-minute periodic call are honoured. One timer, armed for the earliest due role. Every
 * replica that knows a role may hold a timer for it; the rotation itself takes the role's lock and
 * re-reads the role, so only one replica rotates each due time.
 */
const MAX_TIMEOUT = 2 ** 31 - 1;

/** Rotates a role if due; resolves to when it should be looked at next (ms), or undefined to forget it. */
export type RotationCheck = (name: string) => Promise<number | undefined>;

export class RotationTimer {
  private readonly due = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private running = false;
  private stopped = false;

  constructor(
    private readonly check: RotationCheck,
    private readonly retryDelayMs: number,
  ) {}

  schedule(name: string, atMs: number): void {
    this.due.set(name, atMs);
    this.arm();
  }

  forget(name: string): void {
    this.due.delete(name);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    if (this.stopped || this.running || this.due.size === 0) return;
    const earliest = Math.min(...this.due.values());
    this.timer = setTimeout(() => void this.tick(), Math.min(Math.max(earliest - Date.now(), 0), MAX_TIMEOUT));
    this.timer.unref(); // background work must not keep a process alive
  }

  private async tick(): Promise<void> {
    this.running = true;
    const now = Date.now();
    for (const [name, at] of [...this.due]) {
      if (at > now || this.stopped) continue;
      this.due.delete(name);
      const next = await this.check(name).catch(() => Date.now() + this.retryDelayMs);
      // A write that rescheduled the role meanwhile knows better.
      if (next !== undefined && !this.due.has(name)) this.due.set(name, next);
    }
    this.running = false;
    this.arm();
  }
}
