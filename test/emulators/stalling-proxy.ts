import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP front for an emulator that can be made to stall as a provider that hangs does: while
 * stalled it accepts connections and reads what arrives, but never answers, and the connections
 * already open stop being forwarded (the next request on them goes unanswered too). Working
 * again, it forwards new connections and closes the stalled ones, as a restarted provider would.
 * It speaks no protocol, so TLS passes through it unchanged.
 */
export interface StallingProxy {
  url: string;
  stall(): void;
  resume(): void;
  /** Stalled connections that got a request and were then closed by the client: calls it cancelled. */
  cancelledRequests(): number;
  close(): Promise<void>;
}

export async function startStallingProxy(target: string): Promise<StallingProxy> {
  const upstream = new URL(target);
  let stalled = false;
  let cancelled = 0;
  /** Client connection → its connection to the emulator. */
  const forwarded = new Map<Socket, Socket>();
  const held = new Set<Socket>();

  const hold = (client: Socket) => {
    held.add(client);
    let requested = false;
    client.on('data', () => {
      requested = true;
    });
    client.on('close', () => {
      // Still held when it closed: the client gave up on it (resume() forgets a connection before closing it).
      if (held.delete(client) && requested) cancelled++;
    });
    client.resume();
  };

  const server = createServer((client) => {
    client.on('error', () => undefined);
    if (stalled) return hold(client);
    const emulator = connect(Number(upstream.port), upstream.hostname);
    emulator.on('error', () => client.destroy());
    client.on('close', () => {
      if (forwarded.get(client) === emulator) forwarded.delete(client);
      emulator.destroy();
    });
    client.pipe(emulator);
    emulator.pipe(client);
    forwarded.set(client, emulator);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `${upstream.protocol}//127.0.0.1:${(server.address() as AddressInfo).port}`,
    stall() {
      stalled = true;
      for (const [client, emulator] of forwarded) {
        forwarded.delete(client);
        client.unpipe(emulator);
        emulator.unpipe(client);
        emulator.destroy();
        hold(client);
      }
    },
    resume() {
      stalled = false;
      for (const client of [...held]) {
        held.delete(client);
        client.destroy();
      }
    },
    cancelledRequests: () => cancelled,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of [...held, ...forwarded.keys()]) client.destroy();
        server.close(() => resolve());
      }),
  };
}
