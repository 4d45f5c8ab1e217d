import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts a bare node:http server on a free port and prints `{"port": N}` on stdout, so the bench
 * can run each floor in its own process, as the server under test runs in its own.
 */
export function serveFloor(handler: http.RequestListener): void {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

/** Reads a request body the way any JSON API must. */
export function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {});
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

/**
 * A KV version 2 write floor (`PUT /v1/:mount/data/:path`): checks the token, parses the JSON body,
 * stores `data` under the request path with `store`, then answers JSON as the server does.
 */
export function serveWriteFloor(store: (path: string, data: Buffer) => Promise<void> | void): void {
  const tokens = new Set(['bench-root']);
  serveFloor((req, res) => {
    const token = req.headers['x-service-token'];
    if (typeof token !== 'string' || !tokens.has(token)) {
      res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
      return;
    }
    readJson(req)
      .then((body) => store(req.url ?? '', Buffer.from(JSON.stringify((body as { data?: unknown }).data), 'utf8')))
      .then(
        () => {
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.end(JSON.stringify({ request_id: randomUUID(), data: { created_time: new Date().toISOString(), version: 1 } }));
        },
        () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"errors":["write failed"]}'),
      );
  });
}
