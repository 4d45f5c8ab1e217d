/**
 * Counts the invalidations of a cache. A value read while one happened may be older than the change
 * it announced: the reader uses it but does not keep it. Without the count, a read that started
 * before another replica's write and ended after its invalidation would cache the old value for good.
 */
export class InvalidationEpoch {
  private count = 0;

  /** The mark a reader takes before it reads. */
  get mark(): number {
    return this.count;
  }

  advance(): void {
    this.count++;
  }

  /** Whether nothing was invalidated since `mark` was taken: what was read then may be kept. */
  unchangedSince(mark: number): boolean {
    return this.count === mark;
  }
}
