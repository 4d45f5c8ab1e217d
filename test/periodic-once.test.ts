/**
 * Periodic work runs exactly once per due time however many processes could run it: all-in-one
 * with two gateway workers, and distributed with two gateway replicas of two workers each and two
 * replicas of the snapshot and cloud services. Counted where a user sees it: snapshot archives and
 * the runs that wrote them, the IAM calls a static role's rotation and a lease's expiry make at
 * the emulator, and the core's periodic pass that tidies an approle mount's expired secret IDs.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, assertingCalls, eventually, initAndUnseal, startTopology, type Topology, type TopologyKind } from '@svc/testing';
import { callerOf, startIamStsEmulator, type IamStsEmulator } from './emulators/aws/iam-sts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const READ_ONLY = 'arn:aws:iam::aws:policy/ReadOnlyAccess';
/** The shortest rotation period a static role takes, and how often the core runs periodic functions. */
const MINUTE_MS = 60_000;

/** The gaps between consecutive times, in order. */
function gaps(times: number[]): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted.slice(1).map((time, i) => time - sorted[i]);
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('periodic work runs once per due time, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let emulator: IamStsEmulator;
  let snapshotDir: string;
  let expiredSecretIdAccessor: string;
  const call = (method: string, where: string, body?: unknown, token = root) => api<Body>(url, method, `/v1/${where}`, { body, token, headers: { connection: 'close' } });
  const { ok } = assertingCalls(call);

  /** Every log line of every process (all-in-one: the primary and its workers) with this message. */
  const logLines = (msg: string): Body[] =>
    topology.processes
      .flatMap((process) => process.logs)
      .filter((line) => line.startsWith('{') && line.includes(msg))
      .map((line) => JSON.parse(line) as Body)
      .filter((entry) => entry.msg === msg);

  /** Calls of `action` naming `userName` that the IAM emulator saw, by when they came. */
  const iamCalls = (action: string, userName: string) => emulator.state.timedCalls.filter((c) => c.action === action && c.userName === userName).map((c) => c.at);

  beforeAll(async () => {
    emulator = await startIamStsEmulator();
    emulator.state.createUser('svc-root');
    emulator.state.createPolicy(READ_ONLY);
    const rootKey = emulator.state.createAccessKey('svc-root');
    snapshotDir = mkdtempSync(path.join(tmpdir(), 'svc-periodic-once-'));
    topology = await startTopology(kind, { workers: 2, gateways: 2, services: ['snapshot', 'snapshot', 'cloud', 'cloud'] });
    url = topology.urls[0];
    root = (await initAndUnseal(url)).rootToken;
    await ok('POST', 'sys/mounts/cloud', { type: 'cloud' });
    await ok('POST', 'cloud/config/root', { access_key: rootKey.id, secret_key: rootKey.secret, iam_endpoint: emulator.url, sts_endpoint: emulator.url, max_retries: 0 });
    // A secret ID that expires at once: the core's periodic pass tidies it away.
    await ok('POST', 'sys/auth/approle', { type: 'approle' });
    await ok('POST', 'auth/approle/role/short', { token_policies: 'default', secret_id_ttl: '1s' });
    expiredSecretIdAccessor = (await ok('POST', 'auth/approle/role/short/secret-id')).data.secret_id_accessor as string;
  }, 300_000);

  afterAll(async () => {
    await topology?.stop();
    await emulator?.close();
    rmSync(snapshotDir, { recursive: true, force: true });
  });

  test('automated snapshots: one run per interval, each writing one archive', async () => {
    const target = path.join(snapshotDir, kind);
    await ok('POST', 'sys/storage/raft/snapshot-auto/config/once', { interval: '2s', retain: 100, path_prefix: target, file_prefix: 'once', storage_type: 'local', local_max_space: 500_000_000 });
    const started = () => logLines('automated snapshot started').filter((entry) => entry.config === 'once');
    await eventually(async () => started().length >= 6, 60_000, 200);
    await ok('DELETE', 'sys/storage/raft/snapshot-auto/config/once');
    // A run's start is in its file's name (unix nanoseconds): consecutive starts are an interval apart at least.
    const starts = started().map((entry) => Number(/-(\d{19})\.snap$/.exec(entry.url as string)![1].slice(0, 13)));
    expect(gaps(starts).filter((gap) => gap < 2_000)).toEqual([]);
    await eventually(async () => logLines('automated snapshot written').filter((entry) => entry.config === 'once').length === starts.length, 30_000, 200);
    expect(readdirSync(target).filter((name) => name.startsWith('once-'))).toHaveLength(starts.length);
  }, 120_000);

  test('a lease that expires is revoked once: one DeleteUser per user at the provider', async () => {
    await ok('POST', 'cloud/config/lease', { lease: '3s', lease_max: '1h' });
    await ok('POST', 'cloud/roles/short', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const users: string[] = [];
    for (let i = 0; i < 4; i++) users.push(/[^/]+$/.exec((await ok('GET', 'cloud/creds/short')).data.arn as string)![0]);
    await eventually(async () => users.every((user) => !emulator.state.users.has(user)), 60_000, 200);
    // Later ticks and other replicas find nothing more to revoke.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(users.map((user) => iamCalls('DeleteUser', user).length)).toEqual(users.map(() => 1));
  }, 120_000);

  test('a static role rotates once per due time, and static-creds always answer a key that works', async () => {
    emulator.state.createUser('rotated');
    await ok('POST', 'cloud/static-roles/rotated', { username: 'rotated', rotation_period: '1m' });
    // The key made on creation, then two due times: a role due just after a pass waits for the next, so up to two minutes each.
    await eventually(async () => iamCalls('CreateAccessKey', 'rotated').length >= 3, 6 * MINUTE_MS, 1_000);
    // Past the last rotation: a second rotation of that due time would come within seconds.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const created = iamCalls('CreateAccessKey', 'rotated');
    expect(gaps(created).filter((gap) => gap < MINUTE_MS)).toEqual([]);
    // Every gateway worker answers the key IAM holds, and it works.
    const current = emulator.state.keysOf('rotated').sort((a, b) => b.createDate.getTime() - a.createDate.getTime())[0];
    for (let i = 0; i < 8; i++) {
      const creds = (await ok('GET', `cloud/static-creds/rotated`)).data;
      expect(creds.access_key).toBe(current.id);
      expect(await callerOf(emulator, { accessKeyId: creds.access_key as string, secretAccessKey: creds.secret_key as string })).toBe('arn:aws:iam::123456789012:user/rotated');
    }
    await ok('DELETE', 'cloud/static-roles/rotated');
  }, 7 * MINUTE_MS);

  test('the periodic functions run once a minute across every replica: an expired approle secret ID is tidied', async () => {
    // When each pass started (a pass's end depends on how long its mounts' functions took).
    const passes = () => logLines('periodic functions ran').map((entry) => Date.parse(entry.started as string));
    await eventually(async () => passes().length >= 2, 3 * MINUTE_MS, 1_000);
    // A timer may fire a moment early; two replicas' passes within one minute would be seconds apart.
    expect(gaps(passes()).filter((gap) => gap < MINUTE_MS - 1_000)).toEqual([]);
    const secretIds = await call('LIST', 'auth/approle/role/short/secret-id');
    expect(secretIds.status === 404 || !(secretIds.body.data.keys as string[]).includes(expiredSecretIdAccessor)).toBe(true);
  }, 4 * MINUTE_MS);
});
