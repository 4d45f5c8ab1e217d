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
