/**
 * Resolves when one of `waiters` is called (whoever changed what the caller waits for calls them
 * all) or after `ms`, whichever comes first; the waiter removes itself either way.
 */
export function wokenOrTimedOut(waiters: Set<() => void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      waiters.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    waiters.add(wake);
  });
}
