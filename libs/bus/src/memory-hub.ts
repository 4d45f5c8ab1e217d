import { BusMessage } from './types';

export type Replier = (reply: BusMessage) => void;

/**
 * A broker the in-memory bus talks to: the in-process hub, or (in a worker of `svc server` with
 * several workers) the primary process's hub reached over IPC (`RemoteBusHub`).
 */
export interface BusHub {
  /** Registers an endpoint; returns the function that removes it. */
  add(endpoint: Endpoint): () => void;
  /**
   * Delivers to every matching broadcast subscriber and to one member of each matching queue
   * group; `noResponders` is called when nothing receives it.
   */
  dispatch(subject: string, msg: BusMessage, reply?: Replier, noResponders?: () => void): void;
  /** Resolves once every `add` made so far is active at the broker. */
  flush(): Promise<void>;
}

export interface Endpoint {
  readonly pattern: string;
  /** Queue group name; undefined for a broadcast subscriber. */
  readonly queue?: string;
  deliver(msg: BusMessage, reply?: Replier): void;
}

/**
 * The in-process broker: what the NATS server is to NatsBus. Several MemoryBus instances on one
 * hub behave like several connections (replicas) in one process.
 */
export class MemoryBusHub implements BusHub {
  private readonly endpoints = new Set<Endpoint>();
  /** Round-robin position per queue group. */
  private readonly turns = new Map<string, number>();

  /** Registers an endpoint; returns the function that removes it. */
  add(endpoint: Endpoint): () => void {
    validateSubject(endpoint.pattern, true);
    this.endpoints.add(endpoint);
    return () => this.endpoints.delete(endpoint);
  }

  /** Delivers asynchronously, as a broker would (see `BusHub.dispatch`). */
  dispatch(subject: string, msg: BusMessage, reply?: Replier, noResponders?: () => void): void {
    validateSubject(subject, false);
    const receivers: Endpoint[] = [];
    const groups = new Map<string, Endpoint[]>();
    for (const endpoint of this.endpoints) {
      if (!subjectMatches(endpoint.pattern, subject)) continue;
      if (endpoint.queue === undefined) {
        receivers.push(endpoint);
      } else {
        const key = `${endpoint.pattern} ${endpoint.queue}`;
        const members = groups.get(key) ?? [];
        members.push(endpoint);
        groups.set(key, members);
      }
    }
    for (const [key, members] of groups) receivers.push(members[this.nextTurn(key) % members.length]);
    for (const receiver of receivers) {
      const copy: BusMessage = { payload: Uint8Array.from(msg.payload), headers: { ...msg.headers } };
      queueMicrotask(() => receiver.deliver(copy, reply));
    }
    if (receivers.length === 0) noResponders?.();
  }

  async flush(): Promise<void> {
    // Endpoints are active as soon as they are added.
  }

  private nextTurn(group: string): number {
    const turn = this.turns.get(group) ?? 0;
    this.turns.set(group, turn + 1);
    return turn;
  }
}

/** NATS subject semantics: `*` matches one token, a final `>` matches one or more. */
function subjectMatches(pattern: string, subject: string): boolean {
  const patternTokens = pattern.split('.');
  const subjectTokens = subject.split('.');
  for (let i = 0; i < patternTokens.length; i++) {
    const token = patternTokens[i];
    if (token === '>') return subjectTokens.length > i;
    if (i >= subjectTokens.length || (token !== '*' && token !== subjectTokens[i])) return false;
  }
  return patternTokens.length === subjectTokens.length;
}

function validateSubject(subject: string, wildcardsAllowed: boolean): void {
  const tokens = subject.split('.');
  const valid = tokens.every(
    (token, i) =>
      token.length > 0 &&
      !/\s/.test(token) &&
      (wildcardsAllowed ? (token !== '>' || i === tokens.length - 1) : token !== '*' && token !== '>'),
  );
  if (!valid) throw new Error(`invalid bus subject "${subject}"`);
}
