/**
 * Issue 15, unseal keys: sys/rekey/* and sys/generate-root/* end to end, through the API and the
 * `svc` CLI, in both topologies. Distributed runs two gateways and sends shares to both in turn:
 * progress lives in storage, so each share counts wherever it lands.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { decrypt, generateKey, readMessage, type PrivateKey } from 'openpgp';
import { PLAIN_LISTENER, api, assertingCalls, eventually, runCli, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

/** Decrypts a PGP-encrypted share or token (binary message) with the test's private key. */
async function openpgpDecrypt(privateKey: PrivateKey, message: Buffer): Promise<string> {
  const { data } = await decrypt({ message: await readMessage({ binaryMessage: message }), decryptionKeys: privateKey });
  return data as string;
}

/** Decrypts with the real `gpg`, in a keyring made for the test. */
function gpgDecrypt(armoredPrivateKey: string, message: Buffer): string {
  const home = mkdtempSync(path.join(tmpdir(), 'svc-gpg-'));
  try {
    writeFileSync(path.join(home, 'key.asc'), armoredPrivateKey);
    writeFileSync(path.join(home, 'message.gpg'), message);
    execFileSync('gpg', ['--homedir', home, '--batch', '--quiet', '--import', path.join(home, 'key.asc')], { stdio: 'ignore' });
    return execFileSync('gpg', ['--homedir', home, '--batch', '--quiet', '--decrypt', path.join(home, 'message.gpg')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('rekey and generate-root, %s', (kind) => {
  let topology: Topology;
  let urls: string[];
  let root: string;
  /** A threshold of the unseal keys in force; each test that rekeys leaves the new ones here. */
  let keys: string[];
  let auditFile: string;
  let dir: string;

  /** The n-th call goes to gateway n mod replicas, so consecutive shares land on different gateways. */
  let turn = 0;
  const call = (method: string, where: string, body?: unknown, token?: string): Promise<ApiResponse<Body>> =>
    api<Body>(urls[turn++ % urls.length], method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);

  /** Waits until every gateway reports the seal state (a replica follows its peers' seal and unseal). */
  const everyGateway = (sealed: boolean) =>
    eventually(async () => (await Promise.all(urls.map((url) => api<Body>(url, 'GET', '/v1/sys/seal-status')))).every((res) => res.body.sealed === sealed), 15_000);

  /** Seals the cluster, then unseals it with `shares`; whether it opened. */
  const unsealsWith = async (shares: string[]): Promise<boolean> => {
    await ok('PUT', 'sys/seal', undefined, root);
    await everyGateway(true);
    let sealed = true;
    for (const key of shares) {
      const res = await api<Body>(urls[0], 'PUT', '/v1/sys/unseal', { body: { key } });
      if (res.status !== 200) break;
      sealed = res.body.sealed as boolean;
    }
    if (sealed) {
      // Back to a working state with the keys in force, for the next test.
      for (const key of keys) await api(urls[0], 'PUT', '/v1/sys/unseal', { body: { key } });
    }
    await everyGateway(false);
    return !sealed;
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-rekey-'));
    auditFile = path.join(dir, 'audit.log');
    topology = await startTopology(kind, { gateways: 2 });
    urls = topology.urls;
    const init = await api<Body>(urls[0], 'PUT', '/v1/sys/init', { body: { secret_shares: 5, secret_threshold: 3 } });
    root = init.body.root_token as string;
    keys = (init.body.keys as string[]).slice(0, 3);
    for (const key of keys) await api(urls[0], 'PUT', '/v1/sys/unseal', { body: { key } });
    await everyGateway(false);
    await ok('PUT', 'sys/audit/file', { type: 'file', options: { file_path: auditFile } }, root);
    await ok('PUT', 'secret/kept', { value: 'still here' }, root);
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a rekey with PGP keys and a backup: shares decrypt with openpgp and gpg, old keys fail, new ones unseal', async () => {
    const operator = await generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'operator' }], format: 'object' });
    const pgpKey = Buffer.from(operator.publicKey.write()).toString('base64');
    const fingerprint = operator.publicKey.getFingerprint();

    expect(await ok('GET', 'sys/rekey/init')).toMatchObject({ started: false, nonce: '', progress: 0, required: 3 });
    const started = await ok('PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 2, pgp_keys: [pgpKey, pgpKey, pgpKey], backup: true });
    expect(started).toMatchObject({ started: true, t: 2, n: 3, progress: 0, required: 3, backup: true, pgp_fingerprints: [fingerprint, fingerprint, fingerprint] });
    // Two shares at the same time, to two gateways in the distributed topology: both count.
    const answers = await Promise.all(keys.slice(0, 2).map((key) => ok('PUT', 'sys/rekey/update', { key, nonce: started.nonce })));
    expect(answers.map((answer) => answer.progress).sort()).toEqual([1, 2]);
    for (const answer of answers) expect(answer).not.toHaveProperty('keys');
    expect(await ok('GET', 'sys/rekey/init')).toMatchObject({ started: true, progress: 2 });
    const done = await ok('PUT', 'sys/rekey/update', { key: keys[2], nonce: started.nonce });
    expect(done).toMatchObject({ complete: true, nonce: started.nonce, t: 2, n: 3 });
    expect(await ok('GET', 'sys/rekey/init')).toMatchObject({ started: false, required: 2 });

    const newKeys = [
      await openpgpDecrypt(operator.privateKey, Buffer.from(done.keys_base64[0], 'base64')),
      gpgDecrypt(operator.privateKey.armor(), Buffer.from(done.keys[1], 'hex')),
      await openpgpDecrypt(operator.privateKey, Buffer.from(done.keys[2], 'hex')),
    ];
    for (const key of newKeys) expect(key).toMatch(/^[0-9a-f]{66}$/);

    // The backup is sudo-only and holds exactly the encrypted shares handed out.
    expect((await call('GET', 'sys/rekey/backup')).status).toBe(403);
    expect((await ok('GET', 'sys/rekey/backup', undefined, root)).data).toEqual({ nonce: started.nonce, keys: { [fingerprint]: done.keys } });
    await ok('DELETE', 'sys/rekey/backup', undefined, root);
    expect((await call('GET', 'sys/rekey/backup', undefined, root)).status).toBe(404);

    const oldKeys = keys;
    keys = [newKeys[2], newKeys[0]];
    expect(await unsealsWith(oldKeys)).toBe(false);
    expect(await unsealsWith(keys)).toBe(true);
    expect((await ok('GET', 'secret/kept', undefined, root)).data).toEqual({ value: 'still here' });
    expect(await ok('GET', 'sys/seal-status')).toMatchObject({ t: 2, n: 3, sealed: false });
  });

  test('nonce, duplicate and wrong shares; verification restarted keeps the old keys, then completes', async () => {
    const started = await ok('PUT', 'sys/rekey/init', { secret_shares: 2, secret_threshold: 2, require_verification: true });
    await refused('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 }, 400, /already in progress/);
    await refused('PUT', 'sys/rekey/update', { key: keys[0], nonce: 'wrong' }, 400, /nonce does not match/);
    await refused('PUT', 'sys/rekey/update', { key: keys[0] }, 400, /nonce/);
    await ok('PUT', 'sys/rekey/update', { key: keys[0], nonce: started.nonce });
    await refused('PUT', 'sys/rekey/update', { key: keys[0], nonce: started.nonce }, 400, /already submitted/);
    // A share of another split: the set does not rebuild the key and progress starts over.
    const stranger = Buffer.alloc(33, 7).toString('hex');
    await refused('PUT', 'sys/rekey/update', { key: stranger, nonce: started.nonce }, 400, /do not form.*progress has been reset/);
    expect(await ok('GET', 'sys/rekey/init')).toMatchObject({ started: true, nonce: started.nonce, progress: 0 });

    await ok('PUT', 'sys/rekey/update', { key: keys[1], nonce: started.nonce });
    const handed = await ok('PUT', 'sys/rekey/update', { key: keys[0], nonce: started.nonce });
    expect(handed).toMatchObject({ complete: true, verification_required: true, verification_nonce: expect.any(String) });
    await refused('PUT', 'sys/rekey/update', { key: keys[0], nonce: started.nonce }, 400, /await verification/);

    const first = handed.verification_nonce as string;
    expect(await ok('PUT', 'sys/rekey/verify', { key: handed.keys[0], nonce: first })).toMatchObject({ nonce: first, progress: 1, t: 2, n: 2 });
    const restarted = await ok('DELETE', 'sys/rekey/verify');
    expect(restarted).toMatchObject({ progress: 0 });
    expect(restarted.nonce).not.toBe(first);
    expect(await ok('GET', 'sys/rekey/verify')).toMatchObject({ nonce: restarted.nonce, progress: 0 });
    expect(await unsealsWith(keys)).toBe(true);

    await ok('PUT', 'sys/rekey/verify', { key: handed.keys[1], nonce: restarted.nonce });
    expect(await ok('PUT', 'sys/rekey/verify', { key: handed.keys[0], nonce: restarted.nonce })).toEqual({ nonce: restarted.nonce, complete: true });
    const oldKeys = keys;
    keys = handed.keys as string[];
    expect(await unsealsWith(oldKeys)).toBe(false);
    expect(await unsealsWith(keys)).toBe(true);

    // Cancelling at any state leaves the keys in force.
    const again = await ok('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 });
    await ok('PUT', 'sys/rekey/update', { key: keys[0], nonce: again.nonce });
    await ok('DELETE', 'sys/rekey/init');
    expect(await ok('GET', 'sys/rekey/init')).toMatchObject({ started: false });
    expect(await unsealsWith(keys)).toBe(true);
  });

  test('generate-root through the CLI (OTP) and the API (PGP, decrypted by gpg) gives working root tokens', async () => {
    const env = { SVC_ADDR: urls[urls.length - 1] };
    const init = await runCli(['operator', 'generate-root', '-init', '-format=json'], env);
    expect(init.code).toBe(0);
    const attempt = JSON.parse(init.stdout) as Body;
    expect(attempt).toMatchObject({ started: true, progress: 0, required: keys.length, otp_length: 36 });
    expect(attempt.otp).toHaveLength(36);
    expect((await ok('GET', 'sys/generate-root/attempt')).otp).toBe('');
    let last = init;
    for (const key of keys) {
      last = await runCli(['operator', 'generate-root', '-format=json'], { SVC_ADDR: urls[turn++ % urls.length] }, `${key}\n`);
      expect([last.code, last.stderr]).toEqual([0, expect.any(String)]);
    }
    const done = JSON.parse(last.stdout) as Body;
    expect(done).toMatchObject({ complete: true });
    const decoded = await runCli(['operator', 'generate-root', '-decode', done.encoded_token, '-otp', attempt.otp], {});
    expect(decoded.code).toBe(0);
    const token = decoded.stdout.trim();
    expect(token).toMatch(/^svs\./);
    expect((await ok('GET', 'auth/token/lookup-self', undefined, token)).data).toMatchObject({ policies: ['root'] });

    const operator = await generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'operator' }], format: 'object' });
    const pgp = await ok('PUT', 'sys/generate-root/attempt', { pgp_key: Buffer.from(operator.publicKey.write()).toString('base64') });
    expect(pgp).toMatchObject({ otp: '', pgp_fingerprint: operator.publicKey.getFingerprint() });
    await refused('PUT', 'sys/generate-root/attempt', {}, 400, /already in progress/);
    let finished: Body = {};
    for (const key of keys) finished = await ok('PUT', 'sys/generate-root/update', { key, nonce: pgp.nonce });
    const pgpToken = gpgDecrypt(operator.privateKey.armor(), Buffer.from(finished.encoded_token, 'base64'));
    expect((await ok('GET', 'auth/token/lookup-self', undefined, pgpToken)).data).toMatchObject({ policies: ['root'] });

    // Cancel, and a wrong share set keeps the attempt at progress 0.
    const third = await ok('PUT', 'sys/generate-root/attempt', {});
    for (const key of keys.slice(1)) await ok('PUT', 'sys/generate-root/update', { key, nonce: third.nonce });
    await refused('PUT', 'sys/generate-root/update', { key: Buffer.alloc(33, 9).toString('hex'), nonce: third.nonce }, 400, /do not form/);
    expect(await ok('GET', 'sys/generate-root/attempt')).toMatchObject({ started: true, progress: 0 });
    await ok('DELETE', 'sys/generate-root/attempt');
    expect(await ok('GET', 'sys/generate-root/attempt')).toMatchObject({ started: false, nonce: '' });
  });

  test('the CLI rekeys with -init, keys on stdin, -status and -cancel', async () => {
    const env = { SVC_ADDR: urls[0] };
    const started = await runCli(['operator', 'rekey', '-init', '-key-shares=1', '-key-threshold=1', '-format=json'], env);
    expect(started.code).toBe(0);
    const status = await runCli(['operator', 'rekey', '-status'], env);
    expect(status.stdout).toMatch(new RegExp(`Rekey Progress\\s+0/${keys.length}`));
    await runCli(['operator', 'rekey'], env, `${keys[0]}\n`);
    const done = await runCli(['operator', 'rekey'], env, `${keys[1]}\n`);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/Key 1: \S+/);
    expect(done.stdout).toContain('The old keys no longer work.');
    const newKey = Buffer.from(/Key 1: (\S+)/.exec(done.stdout)![1], 'base64').toString('hex');
    keys = [newKey];
    expect(await unsealsWith(keys)).toBe(true);

    expect((await runCli(['operator', 'rekey', '-init', '-key-shares=1', '-key-threshold=1'], env)).code).toBe(0);
    expect((await runCli(['operator', 'rekey', '-cancel'], env)).stdout).toContain('Canceled');
    const recovery = await runCli(['operator', 'rekey', '-target=recovery', '-status'], env);
    expect(recovery.code).toBe(2);
    expect(recovery.stderr).toContain('the shamir seal has no recovery keys');
  });

  test('recovery-key endpoints answer 400 on a Shamir seal; the audit log has the calls with the shares HMAC-ed', async () => {
    for (const [method, where] of [
      ['GET', 'sys/rekey-recovery-key/init'],
      ['PUT', 'sys/rekey-recovery-key/init'],
      ['PUT', 'sys/rekey-recovery-key/update'],
      ['GET', 'sys/rekey-recovery-key/verify'],
    ] as const) {
      await refused(method, where, method === 'GET' ? undefined : { secret_shares: 1, secret_threshold: 1, key: keys[0], nonce: 'x' }, 400, /no recovery keys/);
    }
    await refused('GET', 'sys/rekey/recovery-key-backup', undefined, 403, /permission denied/);
    expect((await call('GET', 'sys/rekey/recovery-key-backup', undefined, root)).status).toBe(400);

    // Refused calls are audited too: here a share sent after the rekey was cancelled.
    const nonce = (await ok('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 })).nonce as string;
    await ok('DELETE', 'sys/rekey/init');
    await refused('PUT', 'sys/rekey/update', { key: keys[0], nonce }, 400, /no rekey is in progress/);
    // Every gateway replica writes its own audit lines to the file named by the device.
    await eventually(async () => readFileSync(auditFile, 'utf8').includes('"path":"sys/rekey/update"'));
    const log = readFileSync(auditFile, 'utf8');
    expect(log).not.toContain(keys[0]);
    const entry = log.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Body).find((e) => e.type === 'request' && e.request.path === 'sys/rekey/update');
    expect(entry?.request.data.key).toMatch(/^hmac-sha256:/);
  });
});

describe('a listener that refuses the unauthenticated rekey and generate-root calls', () => {
  let topology: Topology;

  beforeAll(async () => {
    const closed = 'listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n  disable_unauthed_rekey_endpoints = true\n  disable_unauthed_generate_root_endpoints = true\n}\n';
    topology = await startTopology('all-in-one', { listeners: [PLAIN_LISTENER, closed] });
    // As long as the suite above allows: with gateway workers (SVC_TEST_WORKERS) on a loaded machine, starting takes longer.
  }, 120_000);

  afterAll(() => topology?.stop());

  test('answers 403 naming the option there, while the other listener serves them', async () => {
    const process = topology.processes[0];
    const [open, closed] = process.addresses.map((address) => `http://${address}`);
    const init = await api<Body>(open, 'PUT', '/v1/sys/init', { body: { secret_shares: 1, secret_threshold: 1 } });
    await api(open, 'PUT', '/v1/sys/unseal', { body: { key: init.body.keys[0] } });
    expect((await api(open, 'GET', '/v1/sys/rekey/init')).status).toBe(200);
    const rekey = await api<Body>(closed, 'PUT', '/v1/sys/rekey/init', { body: { secret_shares: 1, secret_threshold: 1 } });
    expect(rekey.status).toBe(403);
    expect(rekey.body.errors[0]).toContain('disable_unauthed_rekey_endpoints');
    const generate = await api<Body>(closed, 'GET', '/v1/sys/generate-root/attempt');
    expect(generate.status).toBe(403);
    expect(generate.body.errors[0]).toContain('disable_unauthed_generate_root_endpoints');
    expect((await api(closed, 'GET', '/v1/sys/seal-status')).status).toBe(200);
  });
});
