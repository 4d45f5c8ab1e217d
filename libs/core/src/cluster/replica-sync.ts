import { randomUUID } from 'node:crypto';
import type { Bus, Subscription } from '@svc/bus';
import { decodeJson, encodeJson } from '@svc/bus';

const HEARTBEAT_MS = 1_000;
/** A replica not heard from for this long is no longer waited for. */
const MEMBER_TIMEOUT_MS = 3_500;
const ACK_TIMEOUT_MS = 2_000;

interface InvalidateMessage {
  from: string;
  nonce: string;
  keys: string[];
}

/**
 * Keeps the in-memory caches of gateway replicas (mount tables, tokens, policies) in step. Writes to
 * watched storage keys are noted as they pass the barrier; before a request's answer leaves, `flush`
 * tells every live replica which keys changed and waits until each has applied it, so a change is
 * in force cluster-wide when the call that made it returns. Replicas find each other by heartbeat.
 */
export class ReplicaSync {
  readonly id = randomUUID();
  private readonly members = new Map<string, number>();
  private readonly pending = new Set<string>();
  private readonly subscriptions: Subscription[] = [];
  private heartbeat?: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly subjectPrefix: string,
    private readonly watched: (key: string) => boolean,
    private readonly apply: (keys: string[]) => Promise<void>,
  ) {}

  start(): void {
    const subjects = this.subjects();
    this.subscriptions.push(
      this.bus.subscribe(subjects.heartbeat, (msg) => {
        const { from } = decodeJson<{ from: string }>(msg.payload);
        if (from !== this.id) this.members.set(from, Date.now());
      }),
      this.bus.subscribe(subjects.invalidate, (msg) => void this.receive(decodeJson<InvalidateMessage>(msg.payload))),
    );
    const beat = () => void this.bus.publish(subjects.heartbeat, encodeJson({ from: this.id })).catch(() => undefined);
    beat();
    this.heartbeat = setInterval(beat, HEARTBEAT_MS).unref();
  }

  stop(): void {
    clearInterval(this.heartbeat);
    this.subscriptions.splice(0).forEach((s) => s.unsubscribe());
  }

  /** Barrier write listener. */
  noteWrite(key: string): void {
    if (this.watched(key)) this.pending.add(key);
  }

  /** Whether a change waits to be propagated (the common request changes nothing). */
  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /** Propagates the noted changes and waits for every live replica to apply them (bounded). */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const keys = [...this.pending];
    this.pending.clear();
    const now = Date.now();
    const waitingFor = new Set([...this.members].filter(([, seen]) => now - seen < MEMBER_TIMEOUT_MS).map(([id]) => id));
    const message: InvalidateMessage = { from: this.id, nonce: randomUUID(), keys };
    if (waitingFor.size === 0) {
      await this.bus.publish(this.subjects().invalidate, encodeJson(message));
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ACK_TIMEOUT_MS);
      const acks = this.bus.subscribe(this.subjects().ack(message.nonce), (msg) => {
        waitingFor.delete(decodeJson<{ from: string }>(msg.payload).from);
        if (waitingFor.size === 0) done();
      });
      function done() {
        clearTimeout(timer);
        acks.unsubscribe();
        resolve();
      }
      void this.bus.publish(this.subjects().invalidate, encodeJson(message)).catch(done);
    });
  }

  private async receive(message: InvalidateMessage): Promise<void> {
    if (message.from === this.id) return;
    await this.apply(message.keys);
    await this.bus.publish(this.subjects().ack(message.nonce), encodeJson({ from: this.id }));
  }

  private subjects() {
    const p = this.subjectPrefix;
    return {
      heartbeat: `${p}.replicas.heartbeat`,
      invalidate: `${p}.replicas.invalidate`,
      ack: (nonce: string) => `${p}.replicas.ack.${nonce}`,
    };
  }
}
