import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { generateKey, readKey } from 'openpgp';
import { envelope } from '@svc/api-contract';
import { type RecordedRequest, StubApi, type StubReply } from '@svc/testing';
import { CliIO, InputStream, runClientCommand } from './index';
import { COMMANDS } from './registry';

let api: StubApi;
let dir: string;

beforeAll(async () => {
  api = await StubApi.start();
  dir = await mkdtemp(join(tmpdir(), 'svc-cli-'));
});

afterAll(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  api.requests.length = 0;
  api.reply = () => ({ status: 204 });
});

function reply(answer: (request: RecordedRequest) => StubReply): void {
  api.reply = answer;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function svc(argv: string[], options: { stdin?: InputStream; env?: Record<string, string> } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    stdin: options.stdin ?? Readable.from([]),
    // HOME is the test's directory: the token helper file (~/.svc-token) is read and written there.
    // No retries: the stub's 5xx answers are the point of the tests that send them.
    env: { SVC_ADDR: api.address, HOME: dir, SVC_MAX_RETRIES: '0', ...options.env },
  };
  const code = await runClientCommand(argv, io);
  return { code, stdout, stderr };
}

const sent = (index = 0) => api.requests[index];
const sentJson = (index = 0) => JSON.parse(sent(index).body) as unknown;

const unsealed = { type: 'shamir', initialized: true, sealed: false, t: 3, n: 5, progress: 0, nonce: '', version: '0.1.0' };
const sealed = { ...unsealed, sealed: true, progress: 1, nonce: 'nonce-1' };

describe('connection settings', () => {
  it('sends the request marker, SVC_TOKEN and SVC_NAMESPACE', async () => {
    reply(() => ({ status: 200, body: unsealed }));
    await svc(['status'], { env: { SVC_TOKEN: 's.tok', SVC_NAMESPACE: 'team-a' } });
    expect(sent().headers).toMatchObject({ 'x-service-request': 'true', 'x-service-token': 's.tok', 'x-service-namespace': 'team-a' });
  });

  it('lets -address and -namespace override the environment', async () => {
    reply(() => ({ status: 200, body: unsealed }));
    const result = await svc(['status', `-address=${api.address}`, '-namespace', 'team-b'], {
      env: { SVC_ADDR: 'http://127.0.0.1:1', SVC_NAMESPACE: 'team-a' },
    });
    expect(result.code).toBe(0);
    expect(sent().headers['x-service-namespace']).toBe('team-b');
  });

  it('reports an unreachable service', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const address = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await svc(['read', 'secret/foo'], { env: { SVC_ADDR: address } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(`Error: cannot reach ${address}: connect ECONNREFUSED`);
  });
});

describe('usage', () => {
  it('prints usage on stderr and exits 1 for an unknown command', async () => {
    const result = await svc(['frobnicate']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Unknown command: frobnicate');
    expect(result.stderr).toContain('Usage: svc <command>');
    expect(result.stderr).toContain('operator unseal [KEY]');
    expect(result.stdout).toBe('');
  });

  it('prints usage on stderr and exits 1 without a command', async () => {
    const result = await svc([]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^Usage: svc <command>/);
  });

  it('prints command help on stdout with -help', async () => {
    const result = await svc(['operator', 'init', '-help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: svc operator init [flags]');
    expect(result.stdout).toContain('-key-shares, -n=<int>');
    expect(api.requests).toHaveLength(0);
  });

  it('rejects an unknown flag and an unknown format with exit 1', async () => {
    const flag = await svc(['read', '-bogus', 'secret/a']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('Error: unknown flag -bogus\nRun "svc read -help" for usage.');
    const format = await svc(['read', '-format=xml', 'secret/a']);
    expect(format.code).toBe(1);
    expect(format.stderr).toContain('Error: -format must be table, json or yaml');
    expect(api.requests).toHaveLength(0);
  });
});

describe('svc status', () => {
  it('prints the seal status and exits 0 when unsealed', async () => {
    reply(() => ({ status: 200, body: unsealed }));
    const result = await svc(['status']);
    expect(sent()).toMatchObject({ method: 'GET', url: '/v1/sys/seal-status' });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        'Key             Value',
        '---             -----',
        'Seal Type       shamir',
        'Initialized     true',
        'Sealed          false',
        'Total Shares    5',
        'Threshold       3',
        'Version         0.1.0',
        '',
      ].join('\n'),
    );
  });

  it('exits 2 and shows unseal progress when sealed', async () => {
    reply(() => ({ status: 200, body: sealed }));
    const result = await svc(['status']);
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/Unseal Progress +1\/3\n/);
    expect(result.stdout).toMatch(/Unseal Nonce +nonce-1\n/);
  });

  it('prints JSON with -format=json', async () => {
    reply(() => ({ status: 200, body: unsealed }));
    const result = await svc(['status', '-format=json']);
    expect(JSON.parse(result.stdout)).toEqual(unsealed);
  });

  it('exits 1 (not 2, which means sealed) when the API fails', async () => {
    reply(() => ({ status: 500, body: { errors: ['storage unavailable'] } }));
    const result = await svc(['status']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('Error: GET /v1/sys/seal-status answered status 500\n* storage unavailable\n');
  });
});

describe('svc operator init', () => {
  const initResponse = { keys: ['aa', 'bb', 'cc'], keys_base64: ['qg==', 'uw==', 'zA=='], root_token: 's.root' };

  it('sends the share settings and prints the keys and root token', async () => {
    reply(() => ({ status: 200, body: initResponse }));
    const result = await svc(['operator', 'init', '-key-shares=3', '-key-threshold', '2']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/init' });
    expect(sentJson()).toEqual({ secret_shares: 3, secret_threshold: 2 });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Unseal Key 1: qg==\nUnseal Key 2: uw==\nUnseal Key 3: zA==\n\nInitial Root Token: s.root\n');
    expect(result.stdout).toContain('initialized with 3 key shares and a key threshold of 2');
  });

  it('defaults to 5 shares and a threshold of 3, and prints JSON', async () => {
    reply(() => ({ status: 200, body: initResponse }));
    const result = await svc(['operator', 'init', '-format=json']);
    expect(sentJson()).toEqual({ secret_shares: 5, secret_threshold: 3 });
    expect(JSON.parse(result.stdout)).toEqual({
      unseal_keys_b64: initResponse.keys_base64,
      unseal_keys_hex: initResponse.keys,
      unseal_shares: 5,
      unseal_threshold: 3,
      root_token: 's.root',
    });
  });

  it('reads PGP public keys from armored, base64 and binary files', async () => {
    const { publicKey } = await generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'op' }], format: 'armored' });
    const binary = Buffer.from((await readKey({ armoredKey: publicKey })).write());
    const armoredPath = join(dir, 'op.asc');
    const base64Path = join(dir, 'op.b64');
    const binaryPath = join(dir, 'op.gpg');
    await writeFile(armoredPath, publicKey);
    await writeFile(base64Path, `${binary.toString('base64')}\n`);
    await writeFile(binaryPath, binary);
    reply(() => ({ status: 200, body: initResponse }));
    const result = await svc([
      'operator',
      'init',
      '-key-shares=3',
      '-key-threshold=2',
      `-pgp-keys=${armoredPath},${base64Path},${binaryPath}`,
      `-root-token-pgp-key=${binaryPath}`,
    ]);
    expect(result.code).toBe(0);
    const expected = binary.toString('base64');
    expect(sentJson()).toEqual({ secret_shares: 3, secret_threshold: 2, pgp_keys: [expected, expected, expected], root_token_pgp_key: expected });
  });

  it('rejects a PGP key count that differs from the share count, before calling the API', async () => {
    const result = await svc(['operator', 'init', '-key-shares=2', '-pgp-keys=a.asc']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Error: -pgp-keys has 1 keys but -key-shares is 2');
    expect(api.requests).toHaveLength(0);
  });

  it('sends recovery key settings for an auto-unseal seal and prints the recovery keys', async () => {
    reply(() => ({ status: 200, body: { keys: [], keys_base64: [], recovery_keys: ['aa', 'bb'], recovery_keys_base64: ['qg==', 'uw=='], root_token: 's.root' } }));
    const result = await svc(['operator', 'init', '-recovery-shares=2', '-recovery-threshold=2']);
    expect(sentJson()).toEqual({ recovery_shares: 2, recovery_threshold: 2 });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Recovery Key 1: qg==\nRecovery Key 2: uw==\n\nInitial Root Token: s.root\n');
    expect(result.stdout).toContain('initialized with 2 recovery keys and a recovery key threshold of 2');
    reply(() => ({ status: 200, body: { keys: [], keys_base64: [], recovery_keys: ['aa'], recovery_keys_base64: ['qg=='], root_token: 's.root' } }));
    const json = await svc(['operator', 'init', '-recovery-shares=1', '-recovery-threshold=1', '-format=json']);
    expect(JSON.parse(json.stdout)).toEqual({ recovery_keys_b64: ['qg=='], recovery_keys_hex: ['aa'], recovery_keys_shares: 1, recovery_keys_threshold: 1, root_token: 's.root' });
  });

  it('refuses unseal key and recovery key flags together, and a recovery PGP key count that differs, before calling the API', async () => {
    const mixed = await svc(['operator', 'init', '-key-shares=3', '-recovery-shares=3']);
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toContain('not both');
    const pgp = await svc(['operator', 'init', '-recovery-shares=2', '-recovery-pgp-keys=a.asc']);
    expect(pgp.code).toBe(1);
    expect(pgp.stderr).toContain('Error: -recovery-pgp-keys has 1 keys but -recovery-shares is 2');
    expect(api.requests).toHaveLength(0);
  });

  it('shows the API errors and exits 2', async () => {
    reply(() => ({ status: 400, body: { errors: ['service is already initialized'] } }));
    const result = await svc(['operator', 'init']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('Error: PUT /v1/sys/init answered status 400\n* service is already initialized\n');
  });
});

describe('svc operator unseal', () => {
  beforeEach(() => reply(() => ({ status: 200, body: sealed })));

  it('sends the key given as an argument and prints the seal status', async () => {
    const result = await svc(['operator', 'unseal', 'share-1']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/unseal' });
    expect(sentJson()).toEqual({ key: 'share-1' });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Unseal Progress +1\/3/);
  });

  it('prompts for the key on stdin when none is given', async () => {
    const result = await svc(['operator', 'unseal'], { stdin: Readable.from(['share-2\nignored\n']) });
    expect(result.stderr).toBe('Unseal Key (will be hidden): \n');
    expect(sentJson()).toEqual({ key: 'share-2' });
    expect(result.stdout).not.toContain('share-2');
  });

  it('reads a terminal in raw mode so the key is not echoed, honouring backspace', async () => {
    const terminal = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    const stdin = Object.assign(terminal, { setRawMode: (mode: boolean) => terminal.rawModes.push(mode) });
    const run = svc(['operator', 'unseal'], { stdin });
    stdin.write('sha');
    stdin.write('x\u007f');
    stdin.write('re-3\r');
    const result = await run;
    expect(sentJson()).toEqual({ key: 'share-3' });
    expect(terminal.rawModes).toEqual([true, false]);
    expect(result.stdout + result.stderr).not.toContain('share-3');
  });

  it('rejects an empty key without calling the API', async () => {
    const result = await svc(['operator', 'unseal'], { stdin: Readable.from(['\n']) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Error: no unseal key given');
    expect(api.requests).toHaveLength(0);
  });

  it('sends migrate with the key under -migrate and shows the migration in the status', async () => {
    reply(() => ({ status: 200, body: { ...sealed, migration: true } }));
    const result = await svc(['operator', 'unseal', '-migrate', 'share-1']);
    expect(sentJson()).toEqual({ key: 'share-1', migrate: true });
    expect(result.stdout).toMatch(/Seal Migration in Progress +true/);
    expect((await svc(['operator', 'unseal', '-migrate', '-reset'])).stderr).toContain('give either -migrate with a key or -reset, not both');
  });

  it('resets progress with -reset', async () => {
    const result = await svc(['operator', 'unseal', '-reset']);
    expect(result.code).toBe(0);
    expect(sentJson()).toEqual({ reset: true });
  });

  it('does not print the key in an API error', async () => {
    reply(() => ({ status: 400, body: { errors: ['invalid key'] } }));
    const result = await svc(['operator', 'unseal', 'wrong-share']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('Error: PUT /v1/sys/unseal answered status 400\n* invalid key\n');
  });
});

describe('svc operator seal', () => {
  it('seals the service', async () => {
    const result = await svc(['operator', 'seal'], { env: { SVC_TOKEN: 's.root' } });
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/seal' });
    expect(result).toEqual({ code: 0, stdout: 'Success! Service is sealed.\n', stderr: '' });
  });
});

describe('svc operator step-down', () => {
  it('asks the answering gateway to step down', async () => {
    const result = await svc(['operator', 'step-down'], { env: { SVC_TOKEN: 's.root' } });
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/step-down' });
    expect(result).toEqual({ code: 0, stdout: 'Success! Stepped down: another gateway takes the active duties.\n', stderr: '' });
  });
});

describe('svc operator rekey', () => {
  const progress = { started: true, nonce: 'n-1', t: 2, n: 3, progress: 1, required: 3, pgp_fingerprints: null, backup: false, verification_required: false };

  it('starts a rekey with the new split and verification', async () => {
    reply(() => ({ status: 200, body: { ...progress, progress: 0, verification_required: true } }));
    const result = await svc(['operator', 'rekey', '-init', '-key-shares=3', '-key-threshold=2', '-verify']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/rekey/init' });
    expect(sentJson()).toEqual({ secret_shares: 3, secret_threshold: 2, backup: false, require_verification: true });
    expect(result.stdout).toMatch(/Verification Required +true/);
  });

  it('reads the nonce from the status, then sends the key given on stdin to the recovery target', async () => {
    reply((request) => ({ status: 200, body: request.method === 'GET' ? progress : { ...progress, progress: 2 } }));
    const result = await svc(['operator', 'rekey', '-target=recovery'], { stdin: Readable.from(['share-1\n']) });
    expect(api.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /v1/sys/rekey-recovery-key/init', 'PUT /v1/sys/rekey-recovery-key/update']);
    expect(sentJson(1)).toEqual({ key: 'share-1', nonce: 'n-1' });
    expect(result.stderr).toBe('Recovery Key (will be hidden): \n');
    expect(result.stdout).toMatch(/Rekey Progress +2\/3/);
  });

  it('prints the new keys on completion, and says they await verification', async () => {
    reply(() => ({ status: 200, body: { ...progress, complete: true, keys: ['aa', 'bb', 'cc'], keys_base64: ['qg==', 'uw==', 'zA=='], verification_nonce: 'v-1' } }));
    const result = await svc(['operator', 'rekey', '-nonce=n-1', 'share-2']);
    expect(result.stdout).toContain('Key 1: qg==\nKey 2: uw==\nKey 3: zA==');
    expect(result.stdout).toContain('verification nonce v-1');
  });

  it('refuses two actions, or an action with a key, and an unknown target', async () => {
    expect((await svc(['operator', 'rekey', '-init', '-cancel'])).stderr).toContain('give at most one of -init, -cancel, -status');
    expect((await svc(['operator', 'rekey', '-status', 'share'])).stderr).toContain('-status takes no key');
    expect((await svc(['operator', 'rekey', '-target=hsm', '-status'])).stderr).toContain('-target must be barrier or recovery');
    expect(api.requests).toHaveLength(0);
  });
});

describe('svc operator generate-root', () => {
  it('starts an attempt and prints the OTP', async () => {
    reply(() => ({ status: 200, body: { started: true, nonce: 'g-1', progress: 0, required: 3, encoded_token: '', encoded_root_token: '', pgp_fingerprint: '', otp: 'OTP123', otp_length: 6, complete: false } }));
    const result = await svc(['operator', 'generate-root', '-init']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/generate-root/attempt' });
    expect(sentJson()).toEqual({});
    expect(result.stdout).toMatch(/OTP +OTP123/);
  });

  it('decodes an encoded token locally with the OTP', async () => {
    const token = 'svs.abc';
    const otp = 'XYZ1234';
    const encoded = Buffer.from([...token].map((c, i) => c.charCodeAt(0) ^ otp.charCodeAt(i))).toString('base64').replace(/=+$/, '');
    const result = await svc(['operator', 'generate-root', '-decode', encoded, '-otp', otp]);
    expect(result).toEqual({ code: 0, stdout: `${token}\n`, stderr: '' });
    expect(api.requests).toHaveLength(0);
  });

  it('needs -otp to decode', async () => {
    const result = await svc(['operator', 'generate-root', '-decode=abc']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('-decode needs -otp');
  });
});

describe('svc read', () => {
  it('prints the data as a sorted table', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { username: 'app', password: 'p@ss', port: 5432 } }) }));
    const result = await svc(['read', 'secret/db']);
    expect(sent()).toMatchObject({ method: 'GET', url: '/v1/secret/db' });
    expect(result.stdout).toBe('Key         Value\n---         -----\npassword    p@ss\nport        5432\nusername    app\n');
  });

  it('shows lease fields and warnings', async () => {
    reply(() => ({
      status: 200,
      body: envelope('r', { data: { a: 'b' }, lease_id: 'db/creds/x/1', lease_duration: 3600, renewable: true, warnings: ['deprecated path'] }),
    }));
    const result = await svc(['read', 'db/creds/x']);
    expect(result.stdout).toMatch(/lease_id +db\/creds\/x\/1\nlease_duration +1h\nlease_renewable +true\na +b\n/);
    expect(result.stderr).toContain('* deprecated path');
  });

  it('prints the whole envelope as JSON', async () => {
    const body = envelope('r', { data: { a: 'b' } });
    reply(() => ({ status: 200, body }));
    expect(JSON.parse((await svc(['read', '-format=json', 'secret/a'])).stdout)).toEqual(body);
  });

  it('exits 2 when nothing is at the path', async () => {
    reply(() => ({ status: 404, body: { errors: [] } }));
    const result = await svc(['read', 'secret/missing']);
    expect(result).toEqual({ code: 2, stdout: '', stderr: 'No value found at secret/missing\n' });
  });

  it('exits 2 with the API errors when refused', async () => {
    reply(() => ({ status: 403, body: { errors: ['permission denied'] } }));
    const result = await svc(['read', 'secret/x']);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'Error: GET /v1/secret/x answered status 403\n* permission denied\n\n' +
        'Hint: no token was sent, or the stored one (~/.svc-token) is refused: set SVC_TOKEN or run "svc login".\n',
    });
  });

  it('needs exactly one path', async () => {
    const result = await svc(['read']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Error: read needs a PATH argument');
  });
});

describe('svc write', () => {
  it('sends K=V pairs as strings', async () => {
    const result = await svc(['write', 'secret/app', 'user=app', 'url=postgres://h/db?x=1']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/secret/app' });
    expect(sentJson()).toEqual({ user: 'app', url: 'postgres://h/db?x=1' });
    expect(result).toEqual({ code: 0, stdout: 'Success! Data written to: secret/app\n', stderr: '' });
  });

  it('reads K=@FILE from a file and K=- from stdin', async () => {
    const certPath = join(dir, 'cert.pem');
    await writeFile(certPath, '-----BEGIN CERTIFICATE-----\nabc\n');
    await svc(['write', 'secret/tls', `cert=@${certPath}`, 'key=-'], { stdin: Readable.from(['s3cret\n']) });
    expect(sentJson()).toEqual({ cert: '-----BEGIN CERTIFICATE-----\nabc\n', key: 's3cret' });
  });

  it('reads a JSON object from stdin with -', async () => {
    await svc(['write', 'secret/j', '-'], { stdin: Readable.from(['{"n": 1, "tags": ["a"]}']) });
    expect(sentJson()).toEqual({ n: 1, tags: ['a'] });
  });

  it('prints the response data when the API returns some', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { version: 2 } }) }));
    const result = await svc(['write', 'kv/data/a', 'x=y']);
    expect(result.stdout).toBe('Key        Value\n---        -----\nversion    2\n');
  });

  it('refuses to write nothing unless -force is given', async () => {
    const refused = await svc(['write', 'sys/thing']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error: no data given');
    expect(api.requests).toHaveLength(0);
    const forced = await svc(['write', '-force', 'sys/thing']);
    expect(forced.code).toBe(0);
    expect(sentJson()).toEqual({});
  });

  it.each([
    [['write', 'secret/a', 'novalue'], {}, 'data argument 1 (after PATH) is not of the form K=V'],
    [['write', 'secret/a', 'k=@/nonexistent/file'], {}, 'cannot read file "/nonexistent/file" for k (ENOENT)'],
    [['write', 'secret/a', '-'], { stdin: Readable.from(['hunter2']) }, 'stdin is not valid JSON'],
    [['write', 'secret/a', '-'], { stdin: Readable.from(['[1]']) }, 'stdin must hold a JSON object'],
    [['write', 'secret/a', 'a=-', 'b=-'], { stdin: Readable.from(['x']) }, 'stdin (-) can be used only once'],
  ])('rejects %p', async (argv, options, message) => {
    const result = await svc(argv, options);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`Error: ${message}`);
    expect(result.stderr).not.toContain('hunter2');
    expect(api.requests).toHaveLength(0);
  });
});

describe('svc list', () => {
  it('sends LIST and prints the keys', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { keys: ['a', 'dir/'] } }) }));
    const result = await svc(['list', 'secret/']);
    expect(sent()).toMatchObject({ method: 'LIST', url: '/v1/secret/' });
    expect(result).toEqual({ code: 0, stdout: 'Keys\n----\na\ndir/\n', stderr: '' });
  });

  it('prints the keys as JSON', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { keys: ['a'] } }) }));
    expect(JSON.parse((await svc(['list', '-format=json', 'secret/'])).stdout)).toEqual(['a']);
  });

  it('exits 2 when there is nothing to list', async () => {
    reply(() => ({ status: 404, body: { errors: [] } }));
    expect(await svc(['list', 'secret/empty/'])).toEqual({ code: 2, stdout: '', stderr: 'No value found at secret/empty/\n' });
  });
});

describe('svc delete', () => {
  it('sends DELETE', async () => {
    const result = await svc(['delete', 'secret/a']);
    expect(sent()).toMatchObject({ method: 'DELETE', url: '/v1/secret/a' });
    expect(result).toEqual({ code: 0, stdout: 'Success! Data deleted (if it existed) at: secret/a\n', stderr: '' });
  });
});

describe('svc login and the token helper file', () => {
  const authBlock = {
    client_token: 'svs.from-login',
    accessor: 'acc-1',
    policies: ['reader', 'default'],
    token_policies: ['reader', 'default'],
    metadata: { username: 'alice' },
    lease_duration: 600,
    renewable: true,
    entity_id: '',
    token_type: 'service',
    orphan: true,
    num_uses: 0,
    mfa_requirement: null,
  };
  const tokenFile = () => join(dir, '.svc-token');

  beforeEach(async () => {
    await rm(tokenFile(), { force: true });
    reply(() => ({ status: 200, body: envelope('r', { auth: authBlock }) }));
  });

  it('logs in with userpass reading the password from stdin, sends no token, stores the new one with mode 0600', async () => {
    await writeFile(tokenFile(), 'svs.older', { mode: 0o644 });
    const result = await svc(['login', '-method=userpass', 'username=alice', 'password=-'], { stdin: Readable.from(['s3cret pass\n']) });
    expect(result.code).toBe(0);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/auth/userpass/login/alice' });
    expect(sent().headers['x-service-token']).toBeUndefined();
    expect(sentJson()).toEqual({ password: 's3cret pass' });
    expect(await readFile(tokenFile(), 'utf8')).toBe('svs.from-login');
    expect((await stat(tokenFile())).mode & 0o777).toBe(0o600);
    expect(result.stdout).toMatch(/Success! You are now authenticated/);
    expect(result.stdout).toMatch(/token_policies +\[reader default\]/);
    expect(result.stdout).toMatch(/token_meta_username +alice/);
    expect(result.stdout + result.stderr).not.toContain('s3cret pass');

    reply(() => ({ status: 200, body: envelope('r', { data: { a: '1' } }) }));
    await svc(['read', 'secret/app']);
    expect(sent(1).headers['x-service-token']).toBe('svs.from-login');
    await svc(['read', 'secret/app'], { env: { SVC_TOKEN: 'svs.environment' } });
    expect(sent(2).headers['x-service-token']).toBe('svs.environment');
  });

  it('prompts for the password without echo on a terminal; -path names the mount', async () => {
    const terminal = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
    const stdin = Object.assign(terminal, { setRawMode: (mode: boolean) => terminal.rawModes.push(mode) });
    const run = svc(['login', '-method=userpass', '-path=people', 'username=alice'], { stdin });
    stdin.write('typed\r');
    const result = await run;
    expect(result.stderr).toBe('Password (will be hidden): \n');
    expect(terminal.rawModes).toEqual([true, false]);
    expect(sent().url).toBe('/v1/auth/people/login/alice');
    expect(sentJson()).toEqual({ password: 'typed' });
  });

  it('refuses to wait for a password that no terminal can type', async () => {
    const result = await svc(['login', '-method=userpass', 'username=alice']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/stdin is not a terminal to prompt on: pass password=\.\.\./);
    expect(api.requests).toHaveLength(0);
    expect((await svc(['login', '-method=userpass', 'password=x'])).stderr).toMatch(/needs username=NAME/);
  });

  it('-token-only prints the token alone and stores nothing; -no-store stores nothing', async () => {
    const only = await svc(['login', '-method=approle', '-token-only', 'role_id=r', 'secret_id=s']);
    expect(only.stdout).toBe('svs.from-login\n');
    expect(sent().url).toBe('/v1/auth/approle/login');
    expect(sentJson()).toEqual({ role_id: 'r', secret_id: 's' });
    const notStored = await svc(['login', '-method=userpass', '-no-store', 'username=alice', 'password=x']);
    expect(notStored.stdout).toMatch(/not stored/);
    await expect(stat(tokenFile())).rejects.toThrow(/ENOENT/);
  });

  it('logs in with a token after checking it with lookup-self', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { accessor: 'acc-2', ttl: 0, renewable: false, policies: ['root'], meta: null } }) }));
    const result = await svc(['login', 'svs.given']);
    expect(sent()).toMatchObject({ method: 'GET', url: '/v1/auth/token/lookup-self' });
    expect(sent().headers['x-service-token']).toBe('svs.given');
    expect(await readFile(tokenFile(), 'utf8')).toBe('svs.given');
    expect(result.stdout).toMatch(/token_duration +∞/);

    reply(() => ({ status: 403, body: { errors: ['permission denied'] } }));
    const bad = await svc(['login', 'svs.bad']);
    expect(bad.code).toBe(2);
    expect(await readFile(tokenFile(), 'utf8')).toBe('svs.given');
  });

  it('warns that SVC_TOKEN still wins after a login', async () => {
    const result = await svc(['login', '-method=userpass', 'username=alice', 'password=x'], { env: { SVC_TOKEN: 'svs.environment' } });
    expect(sent().headers['x-service-token']).toBeUndefined();
    expect(result.stderr).toMatch(/SVC_TOKEN is set/);
  });
});

describe('svc auth', () => {
  it('enables, disables and lists auth methods', async () => {
    expect((await svc(['auth', 'enable', '-description=people', 'userpass'])).stdout).toBe('Success! Enabled userpass auth method at: userpass/\n');
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/auth/userpass' });
    expect(sentJson()).toEqual({ type: 'userpass', description: 'people' });
    await svc(['auth', 'enable', '-path=machines/', 'approle']);
    expect(sent(1).url).toBe('/v1/sys/auth/machines');

    expect((await svc(['auth', 'disable', 'machines'])).stdout).toBe('Success! Disabled the auth method (if it existed) at: machines/\n');
    expect(sent(2)).toMatchObject({ method: 'DELETE', url: '/v1/sys/auth/machines' });

    reply(() => ({
      status: 200,
      body: envelope('r', { data: { 'userpass/': { type: 'userpass', accessor: 'userpass_1', description: 'people' }, 'token/': { type: 'token', accessor: 'token_1', description: '' } } }),
    }));
    const listed = await svc(['auth', 'list']);
    expect(listed.stdout.split('\n').slice(0, 4)).toEqual([
      'Path         Type        Accessor      Description',
      '----         ----        --------      -----------',
      'token/       token       token_1       n/a',
      'userpass/    userpass    userpass_1    people',
    ]);
    expect((await svc(['auth', 'enable'])).code).toBe(1);
  });
});

describe('command lookup', () => {
  it('lists every command, server and cluster included, with -h', async () => {
    const result = await svc(['-h']);
    expect(result.code).toBe(0);
    for (const name of ['kv metadata get PATH', 'token create', 'policy fmt FILE', 'secrets move SOURCE DESTINATION', 'lease revoke', 'namespace create PATH', 'server ', 'cluster ']) {
      expect(result.stdout).toContain(`  ${name}`);
    }
  });

  it('prints its usage for -h on every command, without a request', async () => {
    for (const { name } of COMMANDS) {
      const result = await svc([...name.split(' '), '-h']);
      expect([name, result.code, result.stdout]).toEqual([name, 0, expect.stringContaining(`Usage: svc ${name} [flags]`)]);
    }
    expect(api.requests).toHaveLength(0);
  });

  it('lists a group\'s commands for the group alone, and suggests the nearest command for a typo', async () => {
    const group = await svc(['token']);
    expect(group.code).toBe(1);
    expect(group.stderr).toContain('token capabilities [TOKEN | ACCESSOR] PATH');
    expect(group.stderr).not.toContain('kv get');
    const typo = await svc(['kv', 'gte', 'secret/a']);
    expect(typo.stderr).toContain('Unknown command: kv gte secret/a (did you mean "svc kv get"?)');
    expect(api.requests).toHaveLength(0);
  });
});

describe('svc kv', () => {
  const mountOf = (version: string) => (request: RecordedRequest): StubReply =>
    request.url.startsWith('/v1/sys/internal/ui/mounts/')
      ? { status: 200, body: envelope('r', { data: { type: 'kv', path: 'secret/', options: { version } } }) }
      : { status: 200, body: envelope('r', { data: { data: { pw: 'x' }, metadata: { version: 3 } } }) };

  it('asks which kv version the mount is, then reads MOUNT/data/PATH on version 2 and prints its sections', async () => {
    reply(mountOf('2'));
    const result = await svc(['kv', 'get', '-version=2', 'secret/app']);
    expect(api.requests.map((request) => request.url)).toEqual(['/v1/sys/internal/ui/mounts/secret/app', '/v1/secret/data/app?version=2']);
    expect(result.stdout).toMatch(/^== Secret Path ==\nsecret\/data\/app\n\n== Metadata ==\n[^]*version\s+3\n\n== Data ==\n[^]*pw\s+x\n$/);
    expect((await svc(['kv', 'get', '-field=pw', 'secret/app'])).stdout).toBe('x');
  });

  it('reads MOUNT/PATH on version 1, and takes the mount from -mount', async () => {
    reply(mountOf('1'));
    await svc(['kv', 'put', '-mount=secret', 'app', 'a=b']);
    expect(api.requests.map((request) => `${request.method} ${request.url}`)).toEqual(['GET /v1/sys/internal/ui/mounts/secret', 'PUT /v1/secret/app']);
    expect(sentJson(1)).toEqual({ a: 'b' });
  });

  it('writes a new version with check-and-set, patches with a merge patch, and acts on -versions', async () => {
    reply(mountOf('2'));
    await svc(['kv', 'put', '-cas=3', 'secret/app', 'a=b']);
    expect(sentJson(1)).toEqual({ data: { a: 'b' }, options: { cas: 3 } });
    await svc(['kv', 'patch', 'secret/app', 'a=c']);
    expect(sent(3)).toMatchObject({ method: 'PATCH', url: '/v1/secret/data/app' });
    expect(sent(3).headers['content-type']).toBe('application/merge-patch+json');
    await svc(['kv', 'destroy', '-versions=1,2', 'secret/app']);
    expect(sent(5)).toMatchObject({ method: 'PUT', url: '/v1/secret/destroy/app' });
    expect(sentJson(5)).toEqual({ versions: [1, 2] });
    const missing = await svc(['kv', 'undelete', 'secret/app']);
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining('kv undelete needs -versions')]);
  });

  it('refuses a path outside any kv engine', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { type: 'transit', path: 'transit/' } }) }));
    const result = await svc(['kv', 'get', 'transit/keys/a']);
    expect([result.code, result.stderr]).toEqual([1, expect.stringContaining('no kv secrets engine is mounted at "transit/keys/a"')]);
  });
});

describe('svc token, secrets, lease and unwrap', () => {
  it('token create sends the flags as the API fields and prints the auth block', async () => {
    reply(() => ({ status: 200, body: envelope('r', { auth: { client_token: 'svs.new', accessor: 'a', policies: ['ops'], token_policies: ['ops'], metadata: null, lease_duration: 600, renewable: true } as never }) }));
    const result = await svc(['token', 'create', '-policy=ops', '-policy=dev', '-ttl=10m', '-orphan', '-metadata=team=a', '-use-limit=3']);
    expect(sentJson()).toEqual({ policies: ['ops', 'dev'], ttl: '10m', no_parent: true, meta: { team: 'a' }, num_uses: 3 });
    expect(result.stdout).toMatch(/^token\s+svs\.new$/m);
    expect(result.stdout).toMatch(/^token_duration\s+10m$/m);
  });

  it('token capabilities asks for the calling token, or another one', async () => {
    reply(() => ({ status: 200, body: { capabilities: ['update', 'read'], 'secret/a': ['update', 'read'] } }));
    expect((await svc(['token', 'capabilities', 'secret/a'])).stdout).toBe('read, update\n');
    expect(sent()).toMatchObject({ url: '/v1/sys/capabilities-self' });
    await svc(['token', 'capabilities', 'svs.other', 'secret/a']);
    expect(sentJson(1)).toEqual({ token: 'svs.other', paths: ['secret/a'] });
  });

  it('secrets enable sends the engine version as an option', async () => {
    await svc(['secrets', 'enable', '-path=kv1', '-version=1', '-max-lease-ttl=1h', 'kv']);
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/mounts/kv1' });
    expect(sentJson()).toEqual({ type: 'kv', description: '', config: { max_lease_ttl: '1h' }, options: { version: '1' } });
  });

  it('lease revoke -prefix revokes under a prefix; -force needs -prefix', async () => {
    expect((await svc(['lease', 'revoke', '-prefix', 'database/creds/'])).stdout).toBe('Success! Revoked any leases with prefix: database/creds/\n');
    expect(sent()).toMatchObject({ method: 'PUT', url: '/v1/sys/leases/revoke-prefix/database/creds/' });
    expect((await svc(['lease', 'revoke', '-force', 'x'])).code).toBe(1);
  });

  it('unwrap prints the wrapped secret, and -wrap-ttl asks for a wrapped answer', async () => {
    reply(() => ({ status: 200, body: envelope('r', { data: { password: 'inside' } }) }));
    const result = await svc(['unwrap', 'svs.wrapping']);
    expect(sentJson()).toEqual({ token: 'svs.wrapping' });
    expect(result.stdout).toMatch(/^password\s+inside$/m);
    await svc(['read', '-wrap-ttl=5m', 'secret/a']);
    expect(sent(1).headers['x-service-wrap-ttl']).toBe('5m');
  });
});
