import { BusHub, Endpoint, MemoryBusHub, Replier } from './memory-hub';
import { BusMessage } from './types';
import { NO_RESPONDERS_HEADER } from './wire';

/**
 * The in-memory bus across the processes of one machine (`svc server` with several workers): the
 * primary process holds the one hub (`BusRelay`), and each worker's `MemoryBus` reaches it over
 * IPC through a `RemoteBusHub`. Subjects, queue groups and no-responders behave as in one process.
 */

/** What crosses the IPC channel; `bus` tells these apart from the process's other IPC messages. */
export type HubMessage =
  | { bus: 'add'; sid: number; pattern: string; queue?: string }
  | { bus: 'remove'; sid: number }
  | { bus: 'dispatch'; subject: string; payload: Uint8Array; headers: Record<string, string>; rid?: number }
  | { bus: 'deliver'; sid: number; payload: Uint8Array; headers: Record<string, string>; rid?: number }
  | { bus: 'reply'; rid: number; payload: Uint8Array; headers: Record<string, string> }
  | { bus: 'no-responders'; rid: number }
  | { bus: 'ping'; rid: number }
  | { bus: 'pong'; rid: number };

/** One end of an IPC link (a `node:cluster` worker, or `process` in the worker). */
export interface IpcChannel {
  send(message: HubMessage): void;
  /** Listens to every message of the channel; returns the function that stops listening. */
  onMessage(listener: (message: unknown) => void): () => void;
}

function isHubMessage(message: unknown): message is HubMessage {
  return typeof message === 'object' && message !== null && typeof (message as { bus?: unknown }).bus === 'string';
}

/** Replies owed to a requester, by the id the request carries. */
class PendingReplies<T> {
  private next = 0;
  private readonly entries = new Map<number, T>();

  add(entry: T): number {
    const rid = ++this.next;
    this.entries.set(rid, entry);
    return rid;
  }

  take(rid: number): T | undefined {
    const entry = this.entries.get(rid);
    this.entries.delete(rid);
    return entry;
  }

  drain(): T[] {
    const all = [...this.entries.values()];
    this.entries.clear();
    return all;
  }
}

/**
 * The primary's side: one hub, on which every attached worker's subscriptions are endpoints and
 * into which their messages are dispatched. A `MemoryBus` on `hub` serves in the primary itself.
 */
export class BusRelay {
  readonly hub = new MemoryBusHub();

  /** Joins a worker's channel to the hub; the returned function detaches it (the worker exited). */
  attach(channel: IpcChannel): () => void {
    const endpoints = new Map<number, () => void>();
    // Requests delivered to this worker, still unanswered: the requester's replier by our id.
    const owed = new PendingReplies<{ reply: Replier }>();
    const stopListening = channel.onMessage((message) => {
      if (!isHubMessage(message)) return;
      switch (message.bus) {
        case 'add':
          endpoints.set(
            message.sid,
            this.hub.add({
              pattern: message.pattern,
              queue: message.queue,
              deliver: (msg, reply) => {
                const rid = reply ? owed.add({ reply }) : undefined;
                channel.send({ bus: 'deliver', sid: message.sid, payload: msg.payload, headers: msg.headers, rid });
              },
            }),
          );
          break;
        case 'remove':
          endpoints.get(message.sid)?.();
          endpoints.delete(message.sid);
          break;
        case 'dispatch': {
          const { rid } = message;
          const toRequester: Replier | undefined = rid === undefined ? undefined : (reply) => channel.send({ bus: 'reply', rid, payload: reply.payload, headers: reply.headers });
          this.hub.dispatch(message.subject, { payload: message.payload, headers: message.headers }, toRequester, rid === undefined ? undefined : () => channel.send({ bus: 'no-responders', rid }));
          break;
        }
        case 'reply':
          owed.take(message.rid)?.reply({ payload: message.payload, headers: message.headers });
          break;
        case 'ping':
          channel.send({ bus: 'pong', rid: message.rid });
          break;
      }
    });
    return () => {
      stopListening();
      for (const remove of endpoints.values()) remove();
      endpoints.clear();
      // The worker is gone: what it was asked will never be answered. Requesters hear so at once,
      // as a NATS requester hears that a subject has no responders.
      for (const { reply } of owed.drain()) reply(noResponderReply());
    };
  }
}

function noResponderReply(): BusMessage {
  return { payload: new Uint8Array(), headers: { [NO_RESPONDERS_HEADER]: '1' } };
}

/** A worker's side: the primary's hub as seen through the IPC channel. */
export class RemoteBusHub implements BusHub {
  private nextSid = 0;
  private readonly endpoints = new Map<number, Endpoint>();
  private readonly requests = new PendingReplies<{ reply?: Replier; noResponders?: () => void }>();
  private readonly pings = new PendingReplies<() => void>();

  constructor(private readonly channel: IpcChannel) {
    channel.onMessage((message) => {
      if (isHubMessage(message)) this.receive(message);
    });
  }

  add(endpoint: Endpoint): () => void {
    const sid = ++this.nextSid;
    this.endpoints.set(sid, endpoint);
    this.channel.send({ bus: 'add', sid, pattern: endpoint.pattern, queue: endpoint.queue });
    return () => {
      if (this.endpoints.delete(sid)) this.channel.send({ bus: 'remove', sid });
    };
  }

  dispatch(subject: string, msg: BusMessage, reply?: Replier, noResponders?: () => void): void {
    const rid = reply || noResponders ? this.requests.add({ reply, noResponders }) : undefined;
    this.channel.send({ bus: 'dispatch', subject, payload: msg.payload, headers: msg.headers, rid });
  }

  /** IPC keeps order: once the primary answers a ping, it has taken every `add` sent before it. */
  flush(): Promise<void> {
    return new Promise((resolve) => this.channel.send({ bus: 'ping', rid: this.pings.add(resolve) }));
  }

  private receive(message: HubMessage): void {
    switch (message.bus) {
      case 'deliver': {
        const { rid } = message;
        const reply: Replier | undefined = rid === undefined ? undefined : (answer) => this.channel.send({ bus: 'reply', rid, payload: answer.payload, headers: answer.headers });
        this.endpoints.get(message.sid)?.deliver({ payload: message.payload, headers: message.headers }, reply);
        break;
      }
      case 'reply':
        this.requests.take(message.rid)?.reply?.({ payload: message.payload, headers: message.headers });
        break;
      case 'no-responders':
        this.requests.take(message.rid)?.noResponders?.();
        break;
      case 'pong':
        this.pings.take(message.rid)?.();
        break;
    }
  }
}
