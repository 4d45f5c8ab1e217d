/**
 * `svc operator migrate`: the whole storage of a server (a replication primary) copied offline from
 * PostgreSQL into embedded storage and back, served the same after each copy; the locks that keep
 * servers and migrations apart; a resumed migration; and the refusals.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { createPhysical, migrateStorage, MigrationStopped, PostgresPhysical, storeTables } from '@svc/storage';
import { api, dropTable, initAndUnseal, POSTGRES_URL, REPLICATION_LISTENER, runCli, startServerProcess, withPostgres, type ServerProcess } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const SECRETS = { v1: `kv1-${randomBytes(6).toString('hex')}`, v2first: 'kv2-first', v2: `kv2-${randomBytes(6).toString('hex')}`, alice: `alice-${randomBytes(6).toString('hex')}` };
const PLAINTEXT = Buffer.from('order 4111 1111').toString('base64');
const READER_POLICY = 'path "kv2/data/*" {\n  capabilities = ["read"]\n}\n';

const id = randomBytes(4).toString('hex');
const table = (name: string) => `svc_migrate_${id}_${name}`;
const TABLES = { source: table('source'), roundTrip: table('round_trip'), back: table('back'), resumed: table('resumed'), abandoned: table('abandoned'), empty: table('empty') };

let dir: string;
const running: ServerProcess[] = [];
let keys: string[];
let root: string;
let ciphertext: string;
let token: string;
let replicationBefore: Body;

const postgresStanza = (stanza: string, name: string) => `${stanza} "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${name}"\n}\n`;
const embeddedStanza = (stanza: string, directory: string) => `${stanza} "embedded" {\n  path = "${directory}"\n}\n`;

/** Writes a file in the test's directory; answers its path. */
function file(name: string, text: string): string {
  const where = path.join(dir, name);
  writeFileSync(where, text);
  return where;
}

/** `svc operator migrate -config=FILE` with the configuration given, and more flags. */
function migrate(config: string, ...flags: string[]) {
  return runCli(['operator', 'migrate', `-config=${file(`migrate-${randomBytes(4).toString('hex')}.hcl`, config)}`, ...flags], {});
}

/** A migration's output holds counts and keys, never a value. */
function expectProgressOnly(stdout: string): void {
  const allowed = [
    /^copied \d+ entries \(resume point: ".*"\)$/,
    /^copied \d+ replication metadata records$/,
    /^copied \d+ log entries$/,
    /^Success! Migrated \d+ entries( from key ".*" on)?, \d+ replication metadata records and \d+ log entries \(last log index \d+, logging on\) from (postgresql table "\w+" on [^ ]+|embedded \/\S+) to (postgresql table "\w+" on [^ ]+|embedded \/\S+)\.$/,
  ];
  const lines = stdout.trimEnd().split('\n');
  expect(lines.filter((line) => !allowed.some((pattern) => pattern.test(line)))).toEqual([]);
  expect(lines[lines.length - 1]).toMatch(/^Success! /);
}

async function startOn(name: string, storage: string): Promise<{ server: ServerProcess; url: string }> {
  const server = await startServerProcess(name, [`-config=${file(`${name}.hcl`, `${REPLICATION_LISTENER}\n${storage}`)}`]);
  running.push(server);
  return { server, url: `http://${server.addresses[0]}` };
}

async function ok(url: string, method: string, where: string, body?: unknown, as: string = root): Promise<Body> {
  const res = await api<Body>(url, method, `/v1/${where}`, { body, token: as });
  expect([where, res.status]).toEqual([where, res.status === 204 ? 204 : 200]);
  return res.body ?? {};
}

async function unseal(url: string): Promise<void> {
  for (const key of keys) await ok(url, 'PUT', 'sys/unseal', { key });
}

/** Everything the first server wrote, served the same: secrets, a decryption, a login, a token, a policy, the replication state. */
async function expectServedTheSame(url: string): Promise<void> {
  await unseal(url);
  expect((await ok(url, 'GET', 'kv1/app')).data).toEqual({ password: SECRETS.v1 });
  expect((await ok(url, 'GET', 'kv2/data/app')).data).toMatchObject({ data: { password: SECRETS.v2 }, metadata: { version: 2 } });
  expect((await ok(url, 'GET', 'kv2/data/app?version=1')).data.data).toEqual({ password: SECRETS.v2first });
  expect((await ok(url, 'POST', 'transit/decrypt/orders', { ciphertext })).data.plaintext).toBe(PLAINTEXT);
  const login = await ok(url, 'POST', 'auth/userpass/login/alice', { password: SECRETS.alice }, '');
  expect((await ok(url, 'GET', 'kv2/data/app', undefined, login.auth.client_token)).data.data).toEqual({ password: SECRETS.v2 });
  expect((await api(url, 'GET', '/v1/kv1/app', { token: login.auth.client_token })).status).toBe(403);
  expect((await ok(url, 'GET', 'auth/token/lookup-self', undefined, token)).data.policies.sort()).toEqual(['default', 'reader']);
  expect((await ok(url, 'GET', 'kv2/data/app', undefined, token)).data.data).toEqual({ password: SECRETS.v2 });
  expect((await ok(url, 'GET', 'sys/policies/acl/reader')).data.policy).toBe(READER_POLICY);
  const replication = (await ok(url, 'GET', 'sys/replication/performance/status', undefined, '')).data;
  expect(replication).toMatchObject({ mode: 'primary', cluster_id: replicationBefore.cluster_id });
  expect(replication.last_wal).toBeGreaterThanOrEqual(replicationBefore.last_wal);
}

/** Every row of a PostgreSQL store: data, write-ahead log, its head and the replication metadata. */
function dump(name: string) {
  const [data, , wal, head, meta] = storeTables(name);
  const rows = async (sql: string) => (await withPostgres((client) => client.query(sql))).rows;
  return Promise.all([
    rows(`SELECT parent_path, name, encode(value, 'hex') AS value FROM "${data}" ORDER BY parent_path, name`),
    rows(`SELECT idx, op, key, encode(value, 'hex') AS value FROM "${wal}" ORDER BY idx`),
    rows(`SELECT last_idx, logging FROM "${head}"`),
    rows(`SELECT name, encode(value, 'hex') AS value FROM "${meta}" ORDER BY name`),
  ]);
}

/** A migration between two PostgreSQL tables, made here and stopped after its first batch: what a crash leaves. */
async function interruptedMigration(into: string): Promise<MigrationStopped> {
  const [source, destination] = [TABLES.source, into].map((name) => new PostgresPhysical({ connectionUrl: POSTGRES_URL, table: name, use: 'migration' }));
  await source.open();
  await destination.open();
  const controller = new AbortController();
  try {
    const outcome = await migrateStorage(source, destination, { batchSize: 5, signal: controller.signal, onProgress: () => controller.abort() }).then(() => undefined, (err: unknown) => err);
    expect(outcome).toBeInstanceOf(MigrationStopped);
    return outcome as MigrationStopped;
  } finally {
    await Promise.all([source.close(), destination.close()]);
  }
}

const stopAll = async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
};
// Each test starts the servers it needs; none outlives it, so a failed test leaves no directory or table in use.
afterEach(stopAll);

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'svc-operator-migrate-'));
  const { url } = await startOn('source', postgresStanza('storage', TABLES.source));
  ({ keys, rootToken: root } = await initAndUnseal(url));
  await ok(url, 'POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  await ok(url, 'PUT', 'kv1/app', { password: SECRETS.v1 });
  await ok(url, 'POST', 'sys/mounts/kv2', { type: 'kv', options: { version: '2' } });
  await ok(url, 'POST', 'kv2/data/app', { data: { password: SECRETS.v2first } });
  await ok(url, 'POST', 'kv2/data/app', { data: { password: SECRETS.v2 } });
  for (let i = 0; i < 40; i++) await ok(url, 'POST', `kv2/data/many/s${i}`, { data: { n: String(i) } });
  await ok(url, 'POST', 'sys/mounts/transit', { type: 'transit' });
  await ok(url, 'POST', 'transit/keys/orders', {});
  ciphertext = (await ok(url, 'POST', 'transit/encrypt/orders', { plaintext: PLAINTEXT })).data.ciphertext;
  await ok(url, 'PUT', 'sys/policies/acl/reader', { policy: READER_POLICY });
  await ok(url, 'POST', 'sys/auth/userpass', { type: 'userpass' });
  await ok(url, 'POST', 'auth/userpass/users/alice', { password: SECRETS.alice, token_policies: 'reader' });
  token = (await ok(url, 'POST', 'auth/token/create', { policies: ['reader'], ttl: '24h' })).auth.client_token;
  await ok(url, 'PUT', 'sys/replication/performance/primary/enable', {});
  await ok(url, 'PUT', 'kv1/after-enable', { value: 'logged' });
  replicationBefore = (await ok(url, 'GET', 'sys/replication/performance/status', undefined, '')).data;
  expect(replicationBefore.last_wal).toBeGreaterThan(0);
}, 300_000);

afterAll(async () => {
  await stopAll();
  for (const name of Object.values(TABLES)) await dropTable(name);
  rmSync(dir, { recursive: true, force: true });
});

test('a migration is refused while a server runs on its PostgreSQL source, and a server while a migration holds the table', async () => {
  const embedded = path.join(dir, 'refused');
  const refused = await migrate(postgresStanza('storage_source', TABLES.source) + embeddedStanza('storage_destination', embedded));
  expect([refused.code, refused.stderr]).toEqual([
    1,
    `Error: storage_source (postgresql table "${TABLES.source}" on ${new URL(POSTGRES_URL).host}${new URL(POSTGRES_URL).pathname}): ` +
      `postgresql storage table "${TABLES.source}" is in use by a running server: stop every server and service using it before migrating it\n`,
  ]);
  await stopAll();

  // What `svc operator migrate` holds while it copies.
  const migration = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table: TABLES.source, use: 'migration' });
  await migration.open();
  try {
    await expect(startOn('during-migration', postgresStanza('storage', TABLES.source))).rejects.toThrow(
      `postgresql storage table "${TABLES.source}" is being migrated (svc operator migrate holds it): start the server once the migration has finished`,
    );
  } finally {
    await migration.close();
  }
});

test('copies PostgreSQL into embedded storage and back byte for byte: entries, log, its head and the Merkle metadata', async () => {
  const embedded = path.join(dir, 'embedded');
  const into = await migrate(postgresStanza('storage_source', TABLES.source) + embeddedStanza('storage_destination', embedded));
  expect([into.code, into.stderr]).toEqual([0, '']);
  expectProgressOnly(into.stdout);
  expect(into.stdout).toMatch(/^copied \d+ log entries$/m);
  const back = await migrate(embeddedStanza('storage_source', embedded) + postgresStanza('storage_destination', TABLES.roundTrip));
  expect([back.code, back.stderr]).toEqual([0, '']);
  expectProgressOnly(back.stdout);
  const [source, copy] = await Promise.all([dump(TABLES.source), dump(TABLES.roundTrip)]);
  expect(source[3].some((record) => record.name.startsWith('merkle/replicated/page/'))).toBe(true);
  expect(source[2]).toEqual([{ last_idx: expect.any(String), logging: true }]);
  expect(Number(source[2][0].last_idx)).toBeGreaterThanOrEqual(replicationBefore.last_wal);
  expect(copy).toEqual(source);
}, 300_000);

test('a server on the embedded copy unseals with the same keys and serves everything the same; a migration from it meanwhile is refused, and a server while a migration holds it', async () => {
  const embedded = path.join(dir, 'embedded');
  const { url } = await startOn('embedded-copy', embeddedStanza('storage', embedded));
  await expectServedTheSame(url);
  const refused = await migrate(embeddedStanza('storage_source', embedded) + postgresStanza('storage_destination', TABLES.back));
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(new RegExp(`^Error: storage_source \\(embedded ${embedded}\\): data directory ${embedded} is in use by another server or storage migration \\(pid \\d+`));
  await stopAll();

  // What `svc operator migrate` holds of an embedded store while it copies.
  const migration = createPhysical({ type: 'embedded', options: { path: embedded } }, { use: 'migration' });
  await migration.open();
  try {
    await expect(startOn('during-embedded-migration', embeddedStanza('storage', embedded))).rejects.toThrow(
      `data directory ${embedded} is in use by another server or storage migration (pid ${process.pid} on ${hostname()})`,
    );
  } finally {
    await migration.close();
  }
}, 300_000);

test('the embedded copy migrated into a fresh PostgreSQL table is served the same again', async () => {
  const back = await migrate(embeddedStanza('storage_source', path.join(dir, 'embedded')) + postgresStanza('storage_destination', TABLES.back));
  expect([back.code, back.stderr]).toEqual([0, '']);
  const { url } = await startOn('postgresql-copy', postgresStanza('storage', TABLES.back));
  await expectServedTheSame(url);
}, 300_000);

test('an interrupted migration resumes with -start; until it ends, servers refuse the destination and a fresh start is refused', async () => {
  const stopped = await interruptedMigration(TABLES.resumed);
  expect(stopped.copied).toBe(5);
  await expect(startOn('half-copied', postgresStanza('storage', TABLES.resumed))).rejects.toThrow(
    'this storage is the destination of a storage migration that has not finished',
  );
  const config = postgresStanza('storage_source', TABLES.source) + postgresStanza('storage_destination', TABLES.resumed);
  const again = await migrate(config);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain(`to resume it, run it again with -start=${JSON.stringify(stopped.resumeFrom)}; to start again, use an empty destination`);
  const resumed = await migrate(config, `-start=${stopped.resumeFrom}`);
  expect([resumed.code, resumed.stderr]).toEqual([0, '']);
  expectProgressOnly(resumed.stdout);
  expect(await dump(TABLES.resumed)).toEqual(await dump(TABLES.source));
  const { url } = await startOn('resumed-copy', postgresStanza('storage', TABLES.resumed));
  await unseal(url);
  expect((await ok(url, 'GET', 'kv1/app')).data).toEqual({ password: SECRETS.v1 });
}, 300_000);

test('-reset removes the lock of a migration that will not finish', async () => {
  const stopped = await interruptedMigration(TABLES.abandoned);
  const config = postgresStanza('storage_source', TABLES.source) + postgresStanza('storage_destination', TABLES.abandoned);
  const reset = await migrate(config, '-reset');
  expect([reset.code, reset.stderr]).toEqual([0, '']);
  expect(reset.stdout).toMatch(new RegExp(`^Success! Removed the lock of the migration into postgresql table "${TABLES.abandoned}" .*copied up to ${JSON.stringify(stopped.resumeFrom)}`));
  expect((await migrate(config, '-reset')).stdout).toContain('holds no migration lock: nothing to reset.');
  await startOn('after-reset', postgresStanza('storage', TABLES.abandoned));
}, 300_000);

test('refuses a destination that is not empty, an empty source and bad configurations, with clear messages', async () => {
  const refusal = async (config: string, ...flags: string[]) => {
    const run = await migrate(config, ...flags);
    expect([run.code, run.stdout]).toEqual([1, '']);
    return run.stderr;
  };
  const source = postgresStanza('storage_source', TABLES.source);
  expect(await refusal(source + postgresStanza('storage_destination', TABLES.roundTrip))).toBe(
    'Error: the destination is not empty: migrate into a new table or data directory (or resume an interrupted migration with -start)\n',
  );
  expect(await refusal(postgresStanza('storage_source', TABLES.empty) + embeddedStanza('storage_destination', path.join(dir, 'unused')))).toMatch(
    new RegExp(`^Error: storage_source \\(postgresql table "${TABLES.empty}" .*\\) holds no data: nothing to migrate\n$`),
  );
  expect(await refusal(embeddedStanza('storage_source', path.join(dir, 'missing')) + postgresStanza('storage_destination', TABLES.empty))).toBe(
    `Error: storage_source (embedded ${path.join(dir, 'missing')}): there is no such data directory\n`,
  );
  expect(await refusal(source + postgresStanza('storage_destination', TABLES.source))).toMatch(/^Error: storage_source and storage_destination are the same store \(postgresql table/);
  expect(await refusal(`${source}storage "embedded" {\n  path = "/tmp/x"\n}\n`)).toMatch(/: unknown stanza "storage" \(expected: "storage_source", "storage_destination"\)\n/);
  expect(await refusal(`${source}storage_destination "embedded" {\n  path = "/tmp/x"\n  node_id = "a"\n}\n`)).toMatch(/: storage_destination "embedded": unknown field "node_id" \(expected: "path"\)\n/);
  expect(await refusal(`${source}storage_destination "inmem" {}\n`)).toMatch(/: storage_destination "inmem": in-memory storage keeps nothing once its server stops, so there is nothing to migrate; use postgresql or embedded\n/);
  expect(await refusal(source)).toMatch(/: a storage_destination stanza is required/);
  expect(await refusal(source + postgresStanza('storage_destination', TABLES.roundTrip), '-reset', '-start=a')).toContain('Error: -reset copies nothing, so it takes no -start');

  const noConfig = await runCli(['operator', 'migrate'], {});
  expect([noConfig.code, noConfig.stderr]).toEqual([1, 'Error: -config is required: a file with a storage_source and a storage_destination stanza\nRun "svc operator migrate -help" for usage.\n']);
  const help = await runCli(['operator', 'migrate', '-help'], {});
  expect(help.stdout).toMatch(/^Usage: svc operator migrate \[flags\]\n\nCopy the whole storage/);
  expect(help.stdout).toMatch(/-start/);
  expect(help.stdout).not.toMatch(/-address/);
});
