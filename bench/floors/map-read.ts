import { randomUUID } from 'node:crypto';
import { serveFloor } from './serve';

/**
 * Floor for a KV version 2 read (`GET /v1/:mount/data/:path`): checks the token against an
 * in-memory set, takes the secret from a map by its request path and answers it as JSON in the
 * engine's shape. Everything the gateway does on top (routing, seal state, policy, storage and
 * decryption, version metadata, envelope, headers, logging) is what the ratio measures.
 * FLOOR_KV_PATH and FLOOR_KV_DATA (JSON) give the one entry the bench reads.
 */
const tokens = new Set(['bench-root']);
const secrets = new Map([
  [
    process.env.FLOOR_KV_PATH ?? '',
    {
      data: JSON.parse(process.env.FLOOR_KV_DATA ?? '{}') as unknown,
      metadata: { created_time: new Date().toISOString(), custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
    },
  ],
]);

serveFloor((req, res) => {
  const token = req.headers['x-service-token'];
  if (typeof token !== 'string' || !tokens.has(token)) {
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
    return;
  }
  const secret = secrets.get(req.url ?? '');
  if (!secret) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":[]}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ request_id: randomUUID(), data: secret }));
});
