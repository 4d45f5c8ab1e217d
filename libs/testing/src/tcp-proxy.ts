import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay between one process and a server (NATS, say) that a test can cut, to see what the
 * process does when its link fails. `silent` drops every byte both ways while the sockets stay open,
 * as a network partition looks until some timeout notices; `closed` resets the connections at once.
 */
export class TcpProxy {
  private readonly pairs = new Set<Socket[]>();
  private cut?: 'silent' | 'closed';
  private readonly server = createServer((client) => this.relay(client));
  /** The relay's address, with the target URL's scheme. */
  url = '';

  private constructor(private readonly target: URL) {}

  static async start(targetUrl: string): Promise<TcpProxy> {
    const proxy = new TcpProxy(new URL(targetUrl));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.url = `${proxy.target.protocol}//127.0.0.1:${(proxy.server.address() as { port: number }).port}`;
    return proxy;
  }

  /** Cuts the link: `silent` drops traffic with the connections left open, `closed` resets them. */
  partition(mode: 'silent' | 'closed'): void {
    this.cut = mode;
    if (mode === 'closed') this.resetAll();
  }

  /** Restores the link; connections that lost traffic are reset so the client reconnects cleanly. */
  heal(): void {
    this.resetAll();
    this.cut = undefined;
  }

  async stop(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    client.on('error', () => undefined);
    if (this.cut === 'closed') return void client.resetAndDestroy();
    if (this.cut === 'silent') return void this.pairs.add([client]);
    const upstream = connect(Number(this.target.port), this.target.hostname);
    const pair = [client, upstream];
    this.pairs.add(pair);
    client.on('data', (chunk) => this.cut || upstream.write(chunk));
    upstream.on('data', (chunk) => this.cut || client.write(chunk));
    for (const socket of pair) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.pairs.delete(pair);
        pair.forEach((s) => s.destroy());
      });
    }
  }

  private resetAll(): void {
    for (const pair of this.pairs) pair.forEach((socket) => socket.resetAndDestroy());
    this.pairs.clear();
  }
}
