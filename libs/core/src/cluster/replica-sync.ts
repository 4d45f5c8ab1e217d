import { randomUUID } from 'node:crypto';
import type { Bus, Subscription } from '@svc/bus';
import { BusUnavailableError, decodeJson, encodeJson } from '@svc/bus';
import { ServiceError } from '@svc/api-contract';

const HEARTBEAT_MS = 500;
/** A replica whose own heartbeat has not come back through the bus for this long distrusts its caches. */
const CONTACT_WINDOW_MS = 2_000;
/**
 * A peer not heard from for this long has stopped trusting its caches by the rule above: its last
 * heartbeat that came back to it left at most one interval after the last one that reached us.
 */
const PEER_FENCED_AFTER_MS = CONTACT_WINDOW_MS + HEARTBEAT_MS + 500;
/** How long a request waits for this replica to regain contact before it is refused. */
const CONTACT_WAIT_MS = 1_000;
/** How long a replica still in contact is waited for, at most, before it is taken for gone. */
const MEMBER_ANSWER_LIMIT_MS = 30_000;
/** How soon a write no request propagates is propagated on its own. */
const BACKGROUND_FLUSH_MS = 10;
/** Invalidations applied (or being applied), remembered so a message received twice is applied once. */
const REMEMBERED_NONCES = 1_024;

interface InvalidateMessage {
  from: string;
  nonce: string;
  keys: string[];
}

interface Heartbeat {
  from: string;
  seq: number;
}

export const LOST_CONTACT_MESSAGE = 'this gateway has lost contact with the cluster and cannot vouch for its caches; retry, or use another gateway';

export interface ReplicaSyncHooks {
  /** Another replica changed these storage keys: reload what is cached of them. */
  apply(keys: string[]): Promise<void>;
  /** Contact came back after a gap: every cache may be stale, reload everything. */
  resync(): Promise<void>;
}

/**
 * Keeps the in-memory caches of gateway replicas (mount tables, tokens, policies, storage reads) in
 * step, so a change made through any replica is in force on all of them when the call returns.
 *
 * - Writes to watched keys are noted as they pass the barrier. Before a request's answer leaves,
 *   `flush` broadcasts the keys (for replicas still joining) and asks every known replica directly;
 *   each answers once it has applied them. A replica whose connection is gone gets no responder from
 *   the broker and is dropped at once; one that stays silent is waited for only until it has fenced
 *   itself (below), then dropped.
 * - A replica trusts its caches only while its own heartbeat keeps coming back through the bus.
 *   After a gap (link lost, broker unreachable, event loop stalled) it serves nothing from caches: it
 *   reloads everything, then resumes; requests meanwhile wait briefly, then get 503.
 */
export class ReplicaSync {
  readonly id = randomUUID();
  /** Peers by id: when each was last heard from (performance.now()). */
  private readonly members = new Map<string, number>();
  private readonly pending = new Set<string>();
  /** The propagation under way: a request that finds its keys already taken by it waits for it. */
  private current?: Promise<void>;
  /** The propagation that starts when the current one ends, with every change noted until then. */
  private next?: Promise<void>;
  private readonly subscriptions: Subscription[] = [];
  /** By nonce: the application of an invalidation, which a second copy of it waits for. */
  private readonly applied = new Map<string, Promise<void>>();
  /**
   * The last invalidation applied or being applied. They are applied one at a time in the order
   * received: a reload for an earlier change that ended after a later one's would undo it.
   */
  private applying: Promise<void> = Promise.resolve();
  private heartbeat?: NodeJS.Timeout;
  private backgroundFlush?: NodeJS.Timeout;
  private heartbeatSeq = 0;
  private readonly heartbeatSentAt = new Map<number, number>();
  /** When the newest heartbeat that came back to us left. */
  private lastEchoSentAt = -Infinity;
  private trusted = false;
  private resyncing?: Promise<void>;
  private readonly contactWaiters = new Set<() => void>();
  private stopConnectionWatch?: () => void;

  constructor(
    private readonly bus: Bus,
    private readonly subjectPrefix: string,
    private readonly watched: (key: string) => boolean,
    private readonly hooks: ReplicaSyncHooks,
  ) {}

  /**
   * Joins the replicas, and resolves once every peer in contact has been heard from: a writer waits
   * only for the peers it knows, so a replica that served before it knew a peer could answer a
   * write that peer had yet to apply. Peers beat every HEARTBEAT_MS and answer a newcomer's first
   * beat at once, so one interval is enough. Alone on its bus there is nobody to wait for.
   */
  async start(): Promise<void> {
    const subjects = this.subjects();
    this.subscriptions.push(
      this.bus.subscribe(subjects.heartbeat, (msg) => this.onHeartbeat(decodeJson<Heartbeat>(msg.payload))),
      this.bus.subscribe(subjects.invalidate, (msg) => void this.receive(decodeJson<InvalidateMessage>(msg.payload)).catch(() => undefined)),
      this.bus.serve(subjects.member(this.id), 'replica', async (msg) => {
        await this.receive(decodeJson<InvalidateMessage>(msg.payload));
        return { payload: new Uint8Array(), headers: {} };
      }),
    );
    this.stopConnectionWatch = this.bus.onConnectionChange((connected) => {
      if (!connected) this.trusted = false;
    });
    this.beat();
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS).unref();
    if (!this.bus.alone) await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS + 100));
  }

  stop(): void {
    clearInterval(this.heartbeat);
    clearTimeout(this.backgroundFlush);
    this.stopConnectionWatch?.();
    this.subscriptions.splice(0).forEach((s) => s.unsubscribe());
  }

  /**
   * Whether this replica may serve from its caches now. In one process there are no peers and
   * nothing to lose contact with.
   */
  get inContact(): boolean {
    if (this.bus.kind === 'memory') return true;
    if (this.trusted && this.bus.connected && performance.now() - this.lastEchoSentAt < CONTACT_WINDOW_MS) return true;
    this.trusted = false;
    return false;
  }

  /** Resolves once this replica is in contact (and resynchronized), or throws 503 after a short wait. */
  async awaitContact(): Promise<void> {
    if (this.inContact) return;
    const regained = await new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.contactWaiters.delete(done);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.contactWaiters.delete(done);
        resolve(false);
      }, CONTACT_WAIT_MS);
      this.contactWaiters.add(done);
    });
    if (!regained || !this.inContact) throw ServiceError.unavailable(LOST_CONTACT_MESSAGE);
  }

  /**
   * Barrier write listener; on a bus no other replica can be on, there is no one to tell. A write
   * that no request propagates (background work: lease expiry, a snapshot's status, a rotation) is
   * propagated shortly after on its own; a request's own flush usually comes first.
   */
  noteWrite(key: string): void {
    if (this.bus.alone || !this.watched(key)) return;
    this.pending.add(key);
    this.backgroundFlush ??= setTimeout(() => {
      this.backgroundFlush = undefined;
      if (this.pending.size > 0) this.flush().catch(() => undefined);
    }, BACKGROUND_FLUSH_MS).unref();
  }

  /** A change outside the store (a seal, an unseal, a restore), propagated as a write is. */
  announce(key: string): void {
    this.noteWrite(key);
  }

  /** Whether this replica's caches may be read now: while it is in contact. */
  get upToDate(): boolean {
    return this.inContact;
  }

  /** Waits until they may be (see awaitContact). */
  catchUp(): Promise<void> {
    return this.awaitContact();
  }

  /** Whether a change waits to be propagated, or is being propagated (the common request changes nothing). */
  get hasPending(): boolean {
    return this.pending.size > 0 || this.current !== undefined;
  }

  /**
   * Propagates the noted changes and waits until every replica has applied them or has certainly
   * stopped trusting its caches. One propagation is under way at a time: changes noted meanwhile
   * go together in the next, so concurrent writers share the round trips; a request whose changes
   * another request's propagation took waits for that one. Throws 503 when this replica cannot
   * reach the bus: the change is stored, and is propagated once the link is back.
   */
  flush(): Promise<void> {
    if (this.pending.size === 0 || !this.current) return this.begin();
    this.next ??= this.current
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.begin();
      });
    return this.next;
  }

  /** Starts propagating every change noted so far; with none, the propagation that took them. */
  private begin(): Promise<void> {
    if (this.pending.size === 0) return this.current ?? Promise.resolve();
    if (this.bus.kind === 'nats' && !this.bus.connected) return Promise.reject(ServiceError.unavailable(`the change is stored, but ${LOST_CONTACT_MESSAGE}`));
    const message = encodeJson({ from: this.id, nonce: randomUUID(), keys: [...this.pending] } satisfies InvalidateMessage);
    this.pending.clear();
    const propagation = this.propagate(message).finally(() => {
      if (this.current === propagation) this.current = undefined;
    });
    this.current = propagation;
    return propagation;
  }

  private async propagate(message: Uint8Array): Promise<void> {
    await this.bus.publish(this.subjects().invalidate, message);
    await Promise.all([...this.members.keys()].map((member) => this.tellMember(member, message)));
  }

  /**
   * Asks one replica to apply, for as long as it is in contact: one still heard from is asked again
   * when its answer is late (a replica following an unseal loads its tables first), since asking
   * twice applies once.
   */
  private async tellMember(member: string, message: Uint8Array): Promise<void> {
    const giveUpAt = performance.now() + MEMBER_ANSWER_LIMIT_MS;
    while (performance.now() < giveUpAt) {
      const heardAt = this.members.get(member) ?? -Infinity;
      const untilFencedMs = heardAt + PEER_FENCED_AFTER_MS - performance.now();
      if (untilFencedMs <= 0) break;
      try {
        await this.bus.request(this.subjects().member(member), message, { timeoutMs: untilFencedMs });
        return;
      } catch (err) {
        if (!(err instanceof BusUnavailableError)) throw err;
        if (err.reason !== 'timeout' || this.members.get(member) === heardAt) break;
      }
    }
    // No responder: its connection is gone. Not heard from until the timeout: it has fenced itself
    // by now. Either way it serves nothing stale, and comes back through a full resync. One heard from
    // but silent past MEMBER_ANSWER_LIMIT_MS is dropped all the same.
    this.members.delete(member);
  }

  private beat(): void {
    const seq = ++this.heartbeatSeq;
    this.heartbeatSentAt.set(seq, performance.now());
    this.heartbeatSentAt.delete(seq - Math.ceil(CONTACT_WINDOW_MS / HEARTBEAT_MS) - 1);
    void this.bus.publish(this.subjects().heartbeat, encodeJson({ from: this.id, seq } satisfies Heartbeat)).catch(() => undefined);
  }

  private onHeartbeat({ from, seq }: Heartbeat): void {
    if (from !== this.id) {
      // A newcomer learns of this replica from its answer rather than at the next beat.
      const known = this.members.has(from);
      this.members.set(from, performance.now());
      if (!known) this.beat();
      return;
    }
    const sentAt = this.heartbeatSentAt.get(seq);
    if (sentAt === undefined || sentAt <= this.lastEchoSentAt) return;
    const gap = sentAt - this.lastEchoSentAt >= CONTACT_WINDOW_MS;
    this.lastEchoSentAt = sentAt;
    if (gap) this.trusted = false;
    if (!this.trusted) this.resyncing ??= this.resync();
  }

  /** Reloads every cache, then trusts them again and sends what could not be propagated. */
  private async resync(): Promise<void> {
    try {
      await this.hooks.resync();
      this.trusted = true;
      for (const wake of [...this.contactWaiters]) wake();
      if (this.pending.size > 0) await this.flush();
    } catch {
      // Still untrusted: the next heartbeat that comes back tries again.
    } finally {
      this.resyncing = undefined;
    }
  }

  /**
   * Applies an invalidation once: the broadcast and the direct request carry the same one, and the
   * copy that comes second answers when the first has been applied.
   */
  private receive(message: InvalidateMessage): Promise<void> {
    if (message.from === this.id) return Promise.resolve();
    let applying = this.applied.get(message.nonce);
    if (!applying) {
      applying = this.applying.catch(() => undefined).then(() => this.hooks.apply(message.keys));
      this.applying = applying;
      this.applied.set(message.nonce, applying);
      // A failed application is forgotten, so a later copy tries again.
      applying.catch(() => this.applied.delete(message.nonce));
      if (this.applied.size > REMEMBERED_NONCES) this.applied.delete(this.applied.keys().next().value!);
    }
    return applying;
  }

  private subjects() {
    const p = this.subjectPrefix;
    return {
      heartbeat: `${p}.replicas.heartbeat`,
      invalidate: `${p}.replicas.invalidate`,
      member: (id: string) => `${p}.replicas.member.${id}`,
    };
  }
}
