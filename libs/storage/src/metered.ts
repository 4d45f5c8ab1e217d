import type { Timer, TimerSeries } from '@svc/metrics';
import { ForwardingPhysical } from './forwarding';
import type { ConditionalWrite, Physical, PhysicalTransaction } from './types';

/**
 * A physical store whose operations are timed (Vault's `vault.<backend>.get` and its siblings, as
 * one timer labelled by backend and operation); a transaction is timed whole. Scans, snapshots,
 * restores and the write-ahead log are not: they take as long as the storage is large.
 */
export class MeteredPhysical extends ForwardingPhysical {
  private readonly getSeries: TimerSeries;
  private readonly putSeries: TimerSeries;
  private readonly deleteSeries: TimerSeries;
  private readonly listSeries: TimerSeries;
  private readonly transactionSeries: TimerSeries;
  private readonly conditionalWriteSeries: TimerSeries;

  constructor(inner: Physical, timer: Timer) {
    super(inner);
    this.getSeries = timer.series(inner.kind, 'get');
    this.putSeries = timer.series(inner.kind, 'put');
    this.deleteSeries = timer.series(inner.kind, 'delete');
    this.listSeries = timer.series(inner.kind, 'list');
    this.transactionSeries = timer.series(inner.kind, 'transaction');
    this.conditionalWriteSeries = timer.series(inner.kind, 'conditional-write');
  }

  override get(key: string): Promise<Buffer | null> {
    return timed(this.getSeries, performance.now(), this.inner.get(key));
  }

  override put(key: string, value: Buffer): Promise<void> {
    return timed(this.putSeries, performance.now(), this.inner.put(key, value));
  }

  override delete(key: string): Promise<void> {
    return timed(this.deleteSeries, performance.now(), this.inner.delete(key));
  }

  override list(prefix: string): Promise<string[]> {
    return timed(this.listSeries, performance.now(), this.inner.list(prefix));
  }

  override transaction<T>(fn: (tx: PhysicalTransaction) => Promise<T>): Promise<T> {
    return timed(this.transactionSeries, performance.now(), this.inner.transaction(fn));
  }

  override writeIfUnchanged(write: ConditionalWrite): Promise<boolean> {
    return timed(this.conditionalWriteSeries, performance.now(), this.inner.writeIfUnchanged(write));
  }
}

/** `operation`, started at `started` (its arguments are evaluated in order), recorded in `series` when it settles. */
async function timed<T>(series: TimerSeries, started: number, operation: Promise<T>): Promise<T> {
  try {
    const result = await operation;
    series.record(started, false);
    return result;
  } catch (err) {
    series.record(started, true);
    throw err;
  }
}
