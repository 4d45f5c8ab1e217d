import { randomUUID } from 'node:crypto';
import { serveFloor } from './serve';

/**
 * Floor for `GET /v1/sys/mounts`: checks a token against an in-memory map and returns a mount table
 * of the same size from memory as JSON. Everything the gateway must do on top (routing, seal state,
 * policy, envelope, headers, logging) is what the ratio measures.
 */
const tokens = new Map([['bench-root', { policies: ['root'] }]]);
const mounts = Object.fromEntries(
  ['cubbyhole/', 'secret/', 'sys/'].map((path) => [path, { type: path.slice(0, -1), uuid: randomUUID(), accessor: randomUUID(), config: { default_lease_ttl: 0 } }]),
);

serveFloor((req, res) => {
  const token = req.headers['x-service-token'];
  if (typeof token !== 'string' || !tokens.has(token)) {
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ request_id: randomUUID(), data: mounts }));
});
