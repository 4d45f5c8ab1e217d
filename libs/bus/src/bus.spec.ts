import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'nats';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  Bus,
  BusHandlerError,
  BusMessage,
  BusRelay,
  BusUnavailableError,
  createBus,
  decodeJson,
  encodeJson,
  MemoryBus,
  MemoryBusHub,
  RemoteBusHub,
  REQUEST_ID_HEADER,
  requestJson,
  type HubMessage,
  type IpcChannel,
} from './index';
import { NatsBus } from './nats-bus';

const NATS_SERVERS = ['127.0.0.1:4222'];
/** One cluster key for every connection of these tests: they are one cluster. */
const CLUSTER_KEY_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'bus-test-')), 'cluster.key');
writeFileSync(CLUSTER_KEY_FILE, randomBytes(32).toString('base64'), { mode: 0o600 });
const text = (value: string) => new TextEncoder().encode(value);
const str = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** A promise with its resolver exposed, to wait on events instead of sleeping. */
function signal<T = void>(): { promise: Promise<T>; fire: (value: T) => void } {
  let fire!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (fire = resolve));
  return { promise, fire };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

const memoryHub = new MemoryBusHub();
/** Both ends of an IPC link within this process; messages are cloned and arrive on a later turn, as over IPC. */
function ipcPair(): { primary: IpcChannel; worker: IpcChannel } {
  const listeners = { primary: new Set<(m: unknown) => void>(), worker: new Set<(m: unknown) => void>() };
  const end = (own: Set<(m: unknown) => void>, peer: Set<(m: unknown) => void>): IpcChannel => ({
    send: (message: HubMessage) => {
      const copy = structuredClone(message);
      setImmediate(() => peer.forEach((listener) => listener(copy)));
    },
    onMessage: (listener) => {
      own.add(listener);
      return () => own.delete(listener);
    },
  });
  return { primary: end(listeners.primary, listeners.worker), worker: end(listeners.worker, listeners.primary) };
}

/** A worker's bus on the primary's relay; `leave` detaches it as the primary does when a worker exits. */
function relayedBus(relay: BusRelay): { bus: Bus; leave: () => void } {
  const { primary, worker } = ipcPair();
  const leave = relay.attach(primary);
  return { bus: new MemoryBus({ hub: new RemoteBusHub(worker) }), leave };
}

const relay = new BusRelay();
const transports: { name: string; label?: string; connect: () => Promise<Bus> }[] = [
  { name: 'memory', connect: async () => new MemoryBus({ hub: memoryHub }) },
  { name: 'memory', label: 'relayed (workers through the primary)', connect: async () => relayedBus(relay).bus },
  { name: 'nats', connect: () => createBus({ servers: NATS_SERVERS, name: 'bus-contract-test', clusterKeyFile: CLUSTER_KEY_FILE }) },
];

describe.each(transports.map((t) => ({ ...t, label: t.label ?? t.name })))('$label bus', ({ name, connect }) => {
  let opened: Bus[] = [];
  let prefix: string;

  /** A new connection (another replica) to the same broker, closed after the test. */
  async function open(): Promise<Bus> {
    const bus = await connect();
    opened.push(bus);
    return bus;
  }

  beforeEach(() => {
    prefix = `test.bus.${randomUUID()}`;
  });

  afterEach(async () => {
    await Promise.all(opened.map((bus) => bus.close()));
    opened = [];
  });

  it('reports its transport', async () => {
    expect((await open()).kind).toBe(name);
  });

  it('answers a request and carries headers both ways', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.echo`;
    server.serve(subject, 'echo', async (msg) => ({
      payload: text(str(msg.payload).toUpperCase()),
      headers: { 'svc-seen-request-id': msg.headers[REQUEST_ID_HEADER] },
    }));
    await server.flush();

    const reply = await client.request(subject, text('hello'), { headers: { [REQUEST_ID_HEADER]: 'req-42' } });

    expect(str(reply.payload)).toBe('HELLO');
    expect(reply.headers['svc-seen-request-id']).toBe('req-42');
  });

  it('round-trips JSON with requestJson', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.sum`;
    server.serve(subject, 'sum', async (msg) => {
      const { numbers } = decodeJson<{ numbers: number[] }>(msg.payload);
      return { payload: encodeJson({ total: numbers.reduce((a, b) => a + b, 0) }), headers: {} };
    });
    await server.flush();

    await expect(requestJson<{ total: number }>(client, subject, { numbers: [1, 2, 3] })).resolves.toEqual({ total: 6 });
  });

  it('balances a queue group across replicas, answering each request once', async () => {
    const [replicaA, replicaB, client] = [await open(), await open(), await open()];
    const subject = `${prefix}.work`;
    const handled = { a: 0, b: 0 };
    for (const [replica, id] of [
      [replicaA, 'a'],
      [replicaB, 'b'],
    ] as const) {
      replica.serve(subject, 'workers', async () => {
        handled[id] += 1;
        return { payload: text(id), headers: {} };
      });
      await replica.flush();
    }

    const requests = 40;
    const replies = await Promise.all(Array.from({ length: requests }, () => client.request(subject, text('job'))));

    expect(handled.a).toBeGreaterThan(0);
    expect(handled.b).toBeGreaterThan(0);
    expect(handled.a + handled.b).toBe(requests);
    expect(replies.filter((r) => str(r.payload) === 'a')).toHaveLength(handled.a);
  });

  it('fails at once with no-responders when nobody serves the subject', async () => {
    const client = await open();
    const started = Date.now();

    const err = await rejection(client.request(`${prefix}.nobody`, text('x')));

    expect(err).toBeInstanceOf(BusUnavailableError);
    expect(err).toMatchObject({ subject: `${prefix}.nobody`, reason: 'no-responders' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('times out with BusUnavailableError when the server does not answer in time', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.slow`;
    const release = signal();
    server.serve(subject, 'slow', async () => {
      await release.promise;
      return { payload: text('late'), headers: {} };
    });
    await server.flush();
    const started = Date.now();

    const err = await rejection(client.request(subject, text('x'), { timeoutMs: 200 }));

    const elapsed = Date.now() - started;
    release.fire();
    expect(err).toMatchObject({ name: 'BusUnavailableError', reason: 'timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect(elapsed).toBeLessThan(3000);
  });

  it('rejects with exactly the handler error message (no stack travels)', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.broken`;
    server.serve(subject, 'broken', async () => {
      throw new Error('role "reader" does not exist');
    });
    await server.flush();

    const err = await rejection(client.request(subject, text('x')));

    expect(err).toBeInstanceOf(BusHandlerError);
    expect(err.message).toBe('role "reader" does not exist');
  });

  it('broadcasts a publish to every subscriber, with headers', async () => {
    const [publisher, listenerA, listenerB] = [await open(), await open(), await open()];
    const subject = `${prefix}.invalidate`;
    const got = [signal<BusMessage>(), signal<BusMessage>()];
    listenerA.subscribe(subject, got[0].fire);
    listenerB.subscribe(`${prefix}.*`, got[1].fire);
    await Promise.all([listenerA.flush(), listenerB.flush()]);

    await publisher.publish(subject, text('kv/data/app'), { 'svc-origin': 'node-1' });

    for (const { promise } of got) {
      const msg = await promise;
      expect(str(msg.payload)).toBe('kv/data/app');
      expect(msg.headers['svc-origin']).toBe('node-1');
    }
  });

  it('stops delivering to a subscription once unsubscribed', async () => {
    const [publisher, listener] = [await open(), await open()];
    const received: string[] = [];
    const marker = signal();
    listener.subscribe(`${prefix}.events`, (msg) => received.push(str(msg.payload))).unsubscribe();
    listener.subscribe(`${prefix}.marker`, () => marker.fire());
    await listener.flush();

    // Both publishes reach the listener in order, so once the marker is in, any event would be too.
    await publisher.publish(`${prefix}.events`, text('after-unsubscribe'));
    await publisher.publish(`${prefix}.marker`, text(''));
    await marker.promise;

    expect(received).toEqual([]);
  });

  it('reaches a subscriber that joins after a subject has carried messages, and no longer one that left', async () => {
    const [publisher, early, late] = [await open(), await open(), await open()];
    const subject = `${prefix}.changes`;
    const received: Record<'early' | 'late', string[]> = { early: [], late: [] };
    const next = () => {
      const both = [signal(), signal()];
      return { both, done: Promise.all(both.map((s) => s.promise)) };
    };
    let round = next();
    const earlySubscription = early.subscribe(subject, (msg) => {
      received.early.push(str(msg.payload));
      round.both[0].fire();
    });
    await early.flush();
    round.both[1].fire();
    await publisher.publish(subject, text('first'));
    await round.done;

    round = next();
    late.subscribe(subject, (msg) => {
      received.late.push(str(msg.payload));
      round.both[1].fire();
    });
    await late.flush();
    await publisher.publish(subject, text('second'));
    await round.done;

    earlySubscription.unsubscribe();
    const marker = signal();
    early.subscribe(`${prefix}.marker`, () => marker.fire());
    await early.flush();
    round = next();
    round.both[0].fire();
    await publisher.publish(subject, text('third'));
    // Both reach the early connection in order, so once the marker is in, a third would be too.
    await publisher.publish(`${prefix}.marker`, text(''));
    await Promise.all([round.done, marker.promise]);
    expect(received).toEqual({ early: ['first', 'second'], late: ['second', 'third'] });
  });

  it('answers no-responders once the only server unsubscribes', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.gone`;
    const subscription = server.serve(subject, 'gone', async (msg) => msg);
    await server.flush();
    await expect(client.request(subject, text('x'))).resolves.toBeDefined();

    subscription.unsubscribe();
    await server.flush();

    await expect(client.request(subject, text('x'))).rejects.toMatchObject({ reason: 'no-responders' });
  });

  it('lets an in-flight handler answer while the server closes, then stops serving', async () => {
    const [server, client] = [await open(), await open()];
    const subject = `${prefix}.draining`;
    const started = signal();
    const release = signal();
    server.serve(subject, 'draining', async () => {
      started.fire();
      await release.promise;
      return { payload: text('finished'), headers: {} };
    });
    await server.flush();

    const inFlight = client.request(subject, text('x'));
    await started.promise;
    const closed = server.close();
    release.fire();

    expect(str((await inFlight).payload)).toBe('finished');
    await closed;
    await expect(client.request(subject, text('x'))).rejects.toMatchObject({ reason: 'no-responders' });
  });

  it('refuses every operation after close with reason closed', async () => {
    const bus = await open();
    await bus.close();

    await expect(bus.request(`${prefix}.x`, text('x'))).rejects.toMatchObject({ reason: 'closed' });
    await expect(bus.publish(`${prefix}.x`, text('x'))).rejects.toMatchObject({ reason: 'closed' });
    expect(() => bus.subscribe(`${prefix}.x`, () => undefined)).toThrow(BusUnavailableError);
    expect(() => bus.serve(`${prefix}.x`, 'q', async (msg) => msg)).toThrow(BusUnavailableError);
    await expect(bus.close()).resolves.toBeUndefined();
  });
});

describe('relayed bus', () => {
  it('answers a request whose serving worker exits with no-responders at once', async () => {
    const relay = new BusRelay();
    const client = relayedBus(relay).bus;
    const server = relayedBus(relay);
    const subject = `test.relay.${randomUUID()}`;
    const received = signal();
    server.bus.serve(subject, 'q', () => {
      received.fire();
      return new Promise<BusMessage>(() => undefined);
    });
    await server.bus.flush();
    const pending = client.request(subject, text('x'), { timeoutMs: 60_000 });
    await received.promise;
    server.leave();
    await expect(pending).rejects.toMatchObject({ name: 'BusUnavailableError', reason: 'no-responders' });
    await expect(client.request(subject, text('x'))).rejects.toMatchObject({ reason: 'no-responders' });
  });
});

describe('NATS bus authentication', () => {
  const opened: { close(): Promise<void> }[] = [];
  const refusals: Record<string, unknown>[] = [];
  let refused = signal<Record<string, unknown>>();
  const logger = {
    warn: (fields: Record<string, unknown>) => {
      refusals.push(fields);
      refused.fire(fields);
    },
  };
  const subject = () => `test.bus.${randomUUID()}.secret`;
  async function member(keyFile = CLUSTER_KEY_FILE): Promise<Bus> {
    const bus = await createBus({ servers: NATS_SERVERS, clusterKeyFile: keyFile }, logger);
    opened.push(bus);
    return bus;
  }
  async function serveSecret(bus: Bus, on: string): Promise<void> {
    bus.serve(on, 'q', async () => ({ payload: text('the secret'), headers: {} }));
    await bus.flush();
  }

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((bus) => bus.close()));
    refusals.length = 0;
    refused = signal();
  });

  it('gives a plain NATS client no answer, and logs the refusal without the payload', async () => {
    const server = await member();
    const on = subject();
    await serveSecret(server, on);
    const outsider = await connect({ servers: NATS_SERVERS });
    opened.push(outsider);

    await expect(outsider.request(on, text('{"publicKey":"outsider-key"}'), { timeout: 500 })).rejects.toThrow(/TIMEOUT/);
    expect(await refused.promise).toEqual({ subject: on, reason: 'unauthenticated' });
    expect(JSON.stringify(refusals)).not.toContain('outsider-key');
  });

  it('refuses a member of another cluster (another key), both ways', async () => {
    const otherKey = path.join(mkdtempSync(path.join(tmpdir(), 'bus-test-')), 'other.key');
    writeFileSync(otherKey, randomBytes(32).toString('base64'), { mode: 0o600 });
    const [server, stranger] = [await member(), await member(otherKey)];
    const on = subject();
    await serveSecret(server, on);

    const err = await rejection(stranger.request(on, text('x'), { timeoutMs: 500 }));

    expect(err).toBeInstanceOf(BusUnavailableError);
    expect(refusals).toContainEqual({ subject: on, reason: 'bad signature' });
  });

  it('drops a forged reply and still takes the true one', async () => {
    const [server, client] = [await member(), await member()];
    const on = subject();
    const impostor = await connect({ servers: NATS_SERVERS });
    opened.push(impostor);
    // The impostor answers first, on the requester's inbox; the true server answers later.
    impostor.subscribe(on, { callback: (_err, msg) => msg.respond(text('a keyring of my choosing')) });
    await impostor.flush();
    server.serve(on, 'q', async () => {
      await refused.promise;
      return { payload: text('the true answer'), headers: {} };
    });
    await server.flush();

    const reply = await client.request(on, text('x'));

    expect(str(reply.payload)).toBe('the true answer');
    expect(refusals[0]).toEqual({ subject: expect.stringMatching(/^_INBOX\./), reason: 'unauthenticated' });
  });
});

describe('createBus', () => {
  it('gives the in-memory bus without config and NATS with it', async () => {
    const memory = await createBus();
    const nats = await createBus({ servers: NATS_SERVERS, clusterKeyFile: CLUSTER_KEY_FILE });
    try {
      expect(memory).toBeInstanceOf(MemoryBus);
      expect(nats).toBeInstanceOf(NatsBus);
      // Only an in-memory bus on a hub of its own is alone: one on a shared hub, or NATS, has peers.
      expect([memory.alone, nats.alone, new MemoryBus({ hub: new MemoryBusHub() }).alone]).toEqual([true, false, false]);
    } finally {
      await Promise.all([memory.close(), nats.close()]);
    }
  });

  it('refuses to connect to NATS without a cluster key, saying how to make one', async () => {
    await expect(createBus({ servers: NATS_SERVERS })).rejects.toThrow(/cluster_key_file is required.*openssl rand -base64 32/);
  });

  it('rejects a config without servers', async () => {
    await expect(createBus({ servers: [], clusterKeyFile: CLUSTER_KEY_FILE })).rejects.toThrow('"servers" must list at least one server');
  });

  it('reports an unreachable server without echoing credentials', async () => {
    const err = await rejection(createBus({ servers: ['nats://admin:hunter2@127.0.0.1:1'], password: 'hunter3', clusterKeyFile: CLUSTER_KEY_FILE }));

    expect(err.message).toMatch(/cannot connect to NATS/);
    expect(err.message).not.toMatch(/hunter/);
  });

  it('rejects a non-positive request timeout', async () => {
    const bus = new MemoryBus();
    await expect(bus.request('svc.any.request', text('x'), { timeoutMs: 0 })).rejects.toThrow(
      'bus request timeout must be a positive number of milliseconds',
    );
    await bus.close();
  });
});
