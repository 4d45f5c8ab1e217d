import { BusMessage } from './types';

export type Replier = (reply: BusMessage) => void;

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
export class MemoryBusHub {
  private readonly endpoints = new Set<Endpoint>();
  /** Round-robin position per queue group. */
  private readonly turns = new Map<string, number>();

  /** Registers an endpoint; returns the function that removes it. */
  add(endpoint: Endpoint): () => void {
    validateSubject(endpoint.pattern, true);
    this.endpoints.add(endpoint);
    return () => this.endpoints.delete(endpoint);
  }

  /** Delivers (asynchronously, as a broker would) to every matching broadcast subscriber and to
   * one member of each matching queue group. Returns how many endpoints will receive it. */
  dispatch(subject: string, msg: BusMessage, reply?: Replier): number {
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
    return receivers.length;
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
