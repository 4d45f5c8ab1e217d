import { Pool } from 'pg';
import { serveWriteFloor } from './serve';

/**
 * Floor for a KV version 2 write (`PUT /v1/:mount/data/:path`): checks the token, parses the JSON
 * body and upserts `data` as one row keyed by the request path with a single statement, then
 * answers JSON. Everything the gateway does on top (routing, policy, the key's lock and
 * transaction, check-and-set, version bookkeeping, encryption, envelope) is what the ratio measures.
 * FLOOR_PG_URL and FLOOR_PG_TABLE name the database and a table of the bench's own (it drops it);
 * FLOOR_PG_POOL matches the server's connection pool (PostgreSQL storage defaults to 10).
 */
const table = process.env.FLOOR_PG_TABLE ?? '';
if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error('FLOOR_PG_TABLE must be a plain lower-case table name');
const pool = new Pool({ connectionString: process.env.FLOOR_PG_URL, max: Number(process.env.FLOOR_PG_POOL ?? 10) });
const upsert = `INSERT INTO ${table} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`;

pool.query(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value BYTEA NOT NULL)`).then(
  () => serveWriteFloor(async (path, data) => void (await pool.query(upsert, [path, data]))),
  (err: Error) => {
    process.stderr.write(`pg-upsert floor: ${err.message}\n`);
    process.exit(1);
  },
);
