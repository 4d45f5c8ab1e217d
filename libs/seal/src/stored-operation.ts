import { timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { TransactionalStore } from '@svc/storage';
import { parseShare } from './shares';

/**
 * What a step of an operation decides: the state to store (null removes it), and its answer or a
 * refusal, which is thrown after `next` is stored so that a refusal can still reset progress.
 */
export type Step<S, T> = { next: S | null; result: T } | { next: S | null; error: ServiceError };

/**
 * An operation driven by several unauthenticated calls (rekey, root generation) whose progress
 * lives in storage, so every gateway replica sees the same nonce and the same shares. Each step
 * runs in a transaction holding the operation's lock: two shares sent at once to two replicas are
 * both counted.
 */
export class StoredOperation<S> {
  constructor(
    private readonly store: TransactionalStore,
    private readonly key: string,
  ) {}

  /** The stored state, read past any cache. */
  read(): Promise<S | null> {
    return this.store.transaction(async (tx) => parseState<S>(await tx.get(this.key)));
  }

  /**
   * Reads the state, decides, stores the decision. `decide` must not use storage: the embedded
   * backend has one session, held by this transaction.
   */
  async step<T>(decide: (state: S | null) => Step<S, T>): Promise<T> {
    const outcome = await this.store.transaction(async (tx) => {
      await tx.lock(this.key);
      const step = decide(parseState<S>(await tx.get(this.key)));
      if (step.next === null) await tx.delete(this.key);
      else await tx.put(this.key, Buffer.from(JSON.stringify(step.next), 'utf8'));
      return step;
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  }
}

function parseState<S>(raw: Buffer | null): S | null {
  return raw ? (JSON.parse(raw.toString('utf8')) as S) : null;
}

/** Checks a nonce given by the caller against the operation's, in constant time. */
export function requireNonce(given: string, expected: string, what: string): void {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw ServiceError.badRequest(`nonce does not match the current ${what} (${expected === '' ? 'none is in progress' : 'see its status for the nonce'})`);
}

/**
 * Adds one share (hex or base64) to the shares given so far (hex); refuses a share given twice.
 * Returns every share given so far, as bytes.
 */
export function addShare(given: string[], key: string, shareBytes: number): Buffer[] {
  const share = parseShare(key, shareBytes);
  const shares = given.map((hex) => Buffer.from(hex, 'hex'));
  if (shares.some((earlier) => timingSafeEqual(earlier, share))) {
    throw ServiceError.badRequest('this key share was already submitted in the current operation');
  }
  return [...shares, share];
}
