import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/** A failure the next calls of an operation answer with, as the provider would. */
export interface InjectedFault {
  status: number;
  body: unknown;
}

/** Faults per operation name, each answered `times` times, then gone. */
export class FaultInjector {
  private readonly faults = new Map<string, { fault: InjectedFault; times: number }>();

  failNext(operation: string, fault: InjectedFault, times = 1): void {
    this.faults.set(operation, { fault, times });
  }

  /** The fault due for this call of `operation`, if any. */
  take(operation: string): InjectedFault | undefined {
    const due = this.faults.get(operation);
    if (!due) return undefined;
    if (--due.times <= 0) this.faults.delete(operation);
    return due.fault;
  }
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}

/**
 * An emulator's HTTP server on a free port of 127.0.0.1; a handler that throws answers 500.
 * With `tls` (PEM files of a certificate for 127.0.0.1 and its key) it serves HTTPS, for
 * providers whose SDKs refuse to send credentials over plain HTTP.
 */
export async function listenLocally(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  tls?: { cert: string; key: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => sendJson(res, 500, { message: `emulator failure: ${(err as Error).message}` }));
  };
  const server: Server = tls ? createTlsServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, listener) : createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
