/**
 * The listeners of one event of a part, added by the composition root: a part tells the parts that
 * depend on it what happened (unsealed, sealed, storage replaced) without knowing them.
 */
export class Listeners<Args extends unknown[] = []> {
  private readonly listeners: ((...args: Args) => Promise<void> | void)[] = [];

  add(listener: (...args: Args) => Promise<void> | void): void {
    this.listeners.push(listener);
  }

  /** Calls each listener in the order they were added, each after the previous one finished. */
  async emit(...args: Args): Promise<void> {
    for (const listener of this.listeners) await listener(...args);
  }
}
