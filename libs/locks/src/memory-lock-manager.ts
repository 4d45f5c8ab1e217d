import { performance } from 'node:perf_hooks';
import { LockManagerBase } from './lock-manager-base';

interface Holder {
  owner: string;
  /** Monotonic clock (performance.now), immune to wall-clock jumps. */
  expiresAt: number;
}

/** Lock state in one process; managers sharing a table contend like replicas sharing Redis. */
export class MemoryLockTable {
  private readonly holders = new Map<string, Holder>();
  private readonly lastTokens = new Map<string, number>();

  acquire(name: string, owner: string, ttlMs: number): number | null {
    const current = this.holders.get(name);
    if (current && current.expiresAt > performance.now()) return null;
    this.holders.set(name, { owner, expiresAt: performance.now() + ttlMs });
    const token = (this.lastTokens.get(name) ?? 0) + 1;
    this.lastTokens.set(name, token);
    return token;
  }

  renew(name: string, owner: string, ttlMs: number): boolean {
    const holder = this.heldBy(name, owner);
    if (holder) holder.expiresAt = performance.now() + ttlMs;
    return holder !== undefined;
  }

  release(name: string, owner: string): void {
    if (this.heldBy(name, owner)) this.holders.delete(name);
  }

  private heldBy(name: string, owner: string): Holder | undefined {
    const holder = this.holders.get(name);
    return holder && holder.owner === owner && holder.expiresAt > performance.now() ? holder : undefined;
  }
}

export class MemoryLockManager extends LockManagerBase {
  readonly kind = 'memory';

  constructor(private readonly table = new MemoryLockTable()) {
    super();
  }

  protected async takeOwnership(name: string, owner: string, ttlMs: number): Promise<number | null> {
    return this.table.acquire(name, owner, ttlMs);
  }

  protected async extendOwnership(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.table.renew(name, owner, ttlMs);
  }

  protected async dropOwnership(name: string, owner: string): Promise<void> {
    this.table.release(name, owner);
  }

  protected async disconnect(): Promise<void> {
    // Nothing to disconnect: the table lives as long as its holders reference it.
  }
}
