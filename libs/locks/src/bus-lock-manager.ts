import { decodeJson, encodeJson, requestJson, type Bus, type Subscription } from '@svc/bus';
import { LockManagerBase } from './lock-manager-base';
import { MemoryLockTable } from './memory-lock-manager';

/**
 * Locks of the workers of one `svc server` (all-in-one, several workers): one `MemoryLockTable` in
 * the primary process, which `serveLockTable` answers for over the bus, and a `BusLockManager` in
 * each worker. The table decides atomically, as Redis does for replicas.
 */
interface LockCall {
  op: 'acquire' | 'renew' | 'release';
  name: string;
  owner: string;
  ttlMs?: number;
}

const lockSubject = (subjectPrefix: string) => `${subjectPrefix}.locks.call`;

/** Answers lock calls from the workers out of `table` (in the primary). */
export function serveLockTable(bus: Bus, table: MemoryLockTable, subjectPrefix = 'svc'): Subscription {
  return bus.serve(lockSubject(subjectPrefix), 'locks', async (msg) => {
    const call = decodeJson<LockCall>(msg.payload);
    const result =
      call.op === 'acquire' ? table.acquire(call.name, call.owner, call.ttlMs!) : call.op === 'renew' ? table.renew(call.name, call.owner, call.ttlMs!) : table.release(call.name, call.owner);
    return { payload: encodeJson(result ?? null), headers: {} };
  });
}

export class BusLockManager extends LockManagerBase {
  readonly kind = 'memory';

  constructor(
    private readonly bus: Bus,
    private readonly subjectPrefix = 'svc',
  ) {
    super();
  }

  private call<T>(call: LockCall): Promise<T> {
    return requestJson<T>(this.bus, lockSubject(this.subjectPrefix), call);
  }

  protected takeOwnership(name: string, owner: string, ttlMs: number): Promise<number | null> {
    return this.call({ op: 'acquire', name, owner, ttlMs });
  }

  protected extendOwnership(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.call({ op: 'renew', name, owner, ttlMs });
  }

  protected async dropOwnership(name: string, owner: string): Promise<void> {
    await this.call({ op: 'release', name, owner });
  }

  protected async disconnect(): Promise<void> {
    // The table lives in the primary; nothing here to close.
  }
}
