/**
 * The consistency checker's model: every object the clients create (a KV secret, a token, a mount,
 * a policy, an auth method) has one writer, so its acknowledged states form a sequence. A read may
 * observe any state from the newest one acknowledged or already observed before the read was sent,
 * up to the newest one whose write was sent before the read's answer came back. Anything older is a
 * stale read (a lost write, a revoked token accepted, a deleted secret resurrected); anything
 * newer, or a value never written, is a phantom.
 */

/** The state of an object that does not exist (yet, or any more). */
export const ABSENT = 'absent';
/** What a read sees that shows an object exists but not which of its states it is in. */
export const PRESENT = 'present';
/** A state's value, or PRESENT. */
export type Observation = string;

export interface StateRecord {
  /** What a read observes in this state, e.g. `live`, `revoked`, `v3`, `absent`. */
  readonly value: string;
  /** When its write was sent and acknowledged (performance.now() of the checking process). */
  readonly sentAt: number;
  ackedAt: number;
}

export interface Violation {
  object: string;
  observed: string;
  /** The states the read could have observed. */
  allowed: string[];
  /** When the read was sent and answered, relative to the start of the run (ms). */
  sentAtMs: number;
  answeredAtMs: number;
  detail: string;
}

export class TrackedObject {
  private readonly states: StateRecord[];
  /** The newest state index a read has observed, with when that read was answered. */
  private readonly observedAt: { index: number; at: number }[] = [];
  /** Set when a write's outcome is unknown (an error answer): the object is no longer checked. */
  retired = false;

  constructor(
    readonly name: string,
    initial: string,
  ) {
    this.states = [{ value: initial, sentAt: -Infinity, ackedAt: -Infinity }];
  }

  get current(): string {
    return this.states[this.states.length - 1].value;
  }

  /** A write is sent: its state may be observed from now on. */
  begin(value: string, now: number): StateRecord {
    const record = { value, sentAt: now, ackedAt: Infinity };
    this.states.push(record);
    return record;
  }

  /**
   * Checks one read sent at `sentAt` and answered at `answeredAt` that observed `observed`: the
   * states it could have observed when it did not, or undefined when the read is allowed.
   */
  check(observed: Observation, sentAt: number, answeredAt: number): { allowed: string[] } | undefined {
    if (this.retired) return undefined;
    let low = 0;
    for (let i = this.states.length - 1; i > 0; i--) {
      if (this.states[i].ackedAt < sentAt) {
        low = i;
        break;
      }
    }
    for (const seen of this.observedAt) if (seen.at < sentAt && seen.index > low) low = seen.index;
    let high = low;
    for (let i = this.states.length - 1; i >= low; i--) {
      if (this.states[i].sentAt <= answeredAt) {
        high = i;
        break;
      }
    }
    // The oldest matching state bounds later reads: a value written twice never makes a read look stale.
    for (let i = low; i <= high; i++) {
      if (observed === PRESENT ? this.states[i].value !== ABSENT : this.states[i].value === observed) {
        this.observedAt.push({ index: i, at: answeredAt });
        if (this.observedAt.length > 16) this.observedAt.shift();
        return undefined;
      }
    }
    return { allowed: this.states.slice(low, high + 1).map((state) => state.value) };
  }
}
