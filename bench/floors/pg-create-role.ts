import { randomBytes } from 'node:crypto';
import { escapeIdentifier, escapeLiteral, Pool } from 'pg';
import { serveFloor } from './serve';

/**
 * Floor for `GET /v1/database/creds/:role` on PostgreSQL: checks a token against an in-memory map,
 * makes a name and password, runs the role's one `CREATE ROLE ... VALID UNTIL` on a pooled
 * connection and answers JSON. Everything the service does on top (routing, policy, storage of the
 * lease through the barrier, the engine's transaction, envelope, logging) is what the ratio measures.
 *
 * The roles are dropped in one `DROP ROLE a, b, ...` per second, off the request path, so they do
 * not pile up in the catalogue while the floor runs (the bench drops any left by prefix afterwards).
 * FLOOR_PG_URL names the database, FLOOR_PG_POOL matches the engine's connection pool, and
 * FLOOR_ROLE_PREFIX starts every role name, so the bench can find what is left.
 */
const ROLE_PREFIX = process.env.FLOOR_ROLE_PREFIX ?? '';
if (!/^[a-z][a-z0-9_]*$/.test(ROLE_PREFIX)) throw new Error('FLOOR_ROLE_PREFIX must be a plain lower-case name prefix');
const TTL_SECONDS = 3600;
const DROP_INTERVAL_MS = 1_000;

const tokens = new Map([['bench-root', { policies: ['root'] }]]);
const pool = new Pool({ connectionString: process.env.FLOOR_PG_URL, max: Number(process.env.FLOOR_PG_POOL ?? 8) });
const created: string[] = [];

setInterval(() => {
  const batch = created.splice(0);
  if (batch.length > 0) pool.query(`DROP ROLE IF EXISTS ${batch.map(escapeIdentifier).join(', ')}`).catch(() => created.push(...batch));
}, DROP_INTERVAL_MS).unref();

serveFloor((req, res) => {
  const token = req.headers['x-service-token'];
  if (typeof token !== 'string' || !tokens.has(token)) {
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
    return;
  }
  const username = `${ROLE_PREFIX}${randomBytes(10).toString('hex')}`;
  const password = randomBytes(15).toString('base64url');
  const expiration = new Date(Date.now() + TTL_SECONDS * 1000).toISOString();
  pool
    .query(`CREATE ROLE ${escapeIdentifier(username)} WITH LOGIN PASSWORD ${escapeLiteral(password)} VALID UNTIL ${escapeLiteral(expiration)}`)
    .then(() => {
      created.push(username);
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ lease_duration: TTL_SECONDS, data: { username, password } }));
    })
    .catch((err: Error) => {
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [err.message] }));
    });
});
