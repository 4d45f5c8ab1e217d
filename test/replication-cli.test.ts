/**
 * Issue 19, the CLI: `svc status` shows both replication modes, every sys/replication endpoint is
 * reached with `svc read`, `svc write` and `svc delete`, and `svc operator generate-root -dr-token`
 * makes a DR operation token from the primary's keys. Two all-in-one servers: P and its DR secondary S.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runCli, startReplicationServer, type CliRun, type ReplicationServer } from '@svc/testing';

const home = mkdtempSync(path.join(tmpdir(), 'svc-cli-replication-'));
let p: ReplicationServer;
let s: ReplicationServer;

/** `svc ARGS` against a server, with its root token unless another is given ('' for none). */
async function svc(server: ReplicationServer, args: string[], token = server.root, stdin = ''): Promise<CliRun> {
  return runCli(args, { HOME: home, SVC_ADDR: server.url, SVC_TOKEN: token }, stdin);
}

/** The command succeeded; its standard output. */
async function ok(server: ReplicationServer, args: string[], token?: string, stdin?: string): Promise<string> {
  const run = await svc(server, args, token, stdin);
  expect([args.join(' '), run.code, run.stderr]).toEqual([args.join(' '), 0, '']);
  return run.stdout;
}

beforeAll(async () => {
  p = await startReplicationServer();
  s = await startReplicationServer();
}, 300_000);

afterAll(async () => {
  await Promise.all([p, s].map((server) => server?.topology.stop()));
  rmSync(home, { recursive: true, force: true });
});

test('svc status shows both replication modes', async () => {
  const out = await ok(p, ['status']);
  expect(out).toMatch(/Replication Performance Mode\s+disabled/);
  expect(out).toMatch(/Replication DR Mode\s+disabled/);
});

test('a DR secondary activated, refusing clients, and promoted with svc write and svc operator generate-root -dr-token', async () => {
  await ok(p, ['write', '-force', 'sys/replication/dr/primary/enable']);
  const token = (await ok(p, ['write', '-field=wrapping_token', 'sys/replication/dr/primary/secondary-token', 'id=s', 'ttl=10m'])).trim();
  await ok(s, ['write', 'sys/replication/dr/secondary/enable', `token=${token}`]);

  expect(await ok(s, ['status'], '')).toMatch(/Replication DR Mode\s+secondary/);
  expect(JSON.parse(await ok(s, ['read', '-format=json', 'sys/replication/dr/status'], '')).data).toMatchObject({ mode: 'secondary', secondary_id: 's' });
  const refused = await svc(s, ['read', 'secret/anything'], '');
  expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/DR secondary/)]);

  const started = JSON.parse(await ok(s, ['operator', 'generate-root', '-dr-token', '-init', '-format=json'], ''));
  expect(started).toMatchObject({ started: true, required: 1 });
  const done = JSON.parse(await ok(s, ['operator', 'generate-root', '-dr-token', '-format=json', p.keys[0]], ''));
  expect(done).toMatchObject({ complete: true });
  const drToken = (await ok(s, ['operator', 'generate-root', `-decode=${done.encoded_token}`, `-otp=${started.otp}`], '')).trim();
  expect(drToken).toMatch(/^svd\./);

  await ok(s, ['write', 'sys/replication/dr/secondary/promote', `dr_operation_token=${drToken}`, 'force=true'], '');
  expect(await ok(s, ['status'], '')).toMatch(/Replication DR Mode\s+primary/);
});

test('a paths filter written from JSON on stdin, read and deleted', async () => {
  await ok(p, ['write', '-force', 'sys/replication/performance/primary/enable']);
  const where = 'sys/replication/performance/primary/paths-filter/perf-x';
  await ok(p, ['write', where, '-'], undefined, JSON.stringify({ mode: 'deny', paths: ['secret/', 'team/'] }));
  expect(JSON.parse(await ok(p, ['read', '-format=json', where])).data).toEqual({ mode: 'deny', paths: ['secret/', 'team/'] });
  await ok(p, ['delete', where]);
  expect((await svc(p, ['read', where])).code).toBe(2);
  await ok(p, ['write', '-force', 'sys/replication/performance/primary/disable']);
});
