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
/** The endpoints a subject reaches: every broadcast subscriber, and each queue group's members. */
interface SubjectRoute {
  broadcast: Endpoint[];
  groups: { key: string; members: Endpoint[] }[];
}

/** Subjects whose routes are remembered, at most; past it the memory starts afresh. */
const MAX_REMEMBERED_ROUTES = 1024;

export class MemoryBusHub implements BusHub {
  private readonly endpoints = new Set<Endpoint>();
  /** Round-robin position per queue group. */
  private readonly turns = new Map<string, number>();
  /**
   * Routes by subject, made on a subject's first message and forgotten whenever an endpoint comes
   * or goes: a publish then costs its receivers, not a match against every endpoint of the process.
   */
  private readonly routes = new Map<string, SubjectRoute>();

  /** Registers an endpoint; returns the function that removes it. */
  add(endpoint: Endpoint): () => void {
    validateSubject(endpoint.pattern, true);
    this.endpoints.add(endpoint);
    this.routes.clear();
    return () => {
      this.endpoints.delete(endpoint);
      this.routes.clear();
    };
  }

  /** Delivers asynchronously, as a broker would (see `BusHub.dispatch`). */
  dispatch(subject: string, msg: BusMessage, reply?: Replier, noResponders?: () => void): void {
    const route = this.routes.get(subject) ?? this.route(subject);
    const receivers = route.groups.length === 0 ? route.broadcast : [...route.broadcast, ...route.groups.map(({ key, members }) => members[this.nextTurn(key) % members.length])];
    for (const receiver of receivers) {
      const copy: BusMessage = { payload: Uint8Array.from(msg.payload), headers: { ...msg.headers } };
      queueMicrotask(() => receiver.deliver(copy, reply));
    }
    if (receivers.length === 0) noResponders?.();
  }

  async flush(): Promise<void> {
    // Endpoints are active as soon as they are added.
  }

  private route(subject: string): SubjectRoute {
    validateSubject(subject, false);
    const broadcast: Endpoint[] = [];
    const groups = new Map<string, Endpoint[]>();
    for (const endpoint of this.endpoints) {
      if (!subjectMatches(endpoint.pattern, subject)) continue;
      if (endpoint.queue === undefined) {
        broadcast.push(endpoint);
      } else {
        const key = `${endpoint.pattern} ${endpoint.queue}`;
        const members = groups.get(key) ?? [];
        members.push(endpoint);
        groups.set(key, members);
      }
    }
    const route = { broadcast, groups: [...groups].map(([key, members]) => ({ key, members })) };
    if (this.routes.size >= MAX_REMEMBERED_ROUTES) this.routes.clear();
    this.routes.set(subject, route);
    return route;
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
