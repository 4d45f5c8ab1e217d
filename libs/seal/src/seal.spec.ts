import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ServiceError, type ErrorKind } from '@svc/api-contract';
import { InmemPhysical, PostgresPhysical, type Physical } from '@svc/storage';
import { dropTable } from '@svc/testing';
import { generateKey } from 'openpgp';
import { encryptRootToken } from './pgp';
import { SEAL_STORAGE_KEYS, ShamirSeal, type InitRequest } from './seal';

const run = promisify(execFile);
const BUILD = { version: '0.1.0', buildDate: '2025-01-01T00:00:00Z' };

async function initialized(request: InitRequest, physical: Physical = new InmemPhysical()) {
  const seal = new ShamirSeal(physical, BUILD);
  const init = await seal.initialize(request);
  return { physical, seal, init };
}

async function expectServiceError(promise: Promise<unknown>, kind: ErrorKind, message: string | RegExp) {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).kind).toBe(kind);
  expect((err as ServiceError).errors.join('\n')).toMatch(message);
}

describe('ShamirSeal', () => {
  it('reports an uninitialized, sealed service with Vault seal-status fields', async () => {
    const seal = new ShamirSeal(new InmemPhysical(), BUILD);
    expect(await seal.status()).toEqual({
      type: 'shamir',
      initialized: false,
      sealed: true,
      t: 0,
      n: 0,
      progress: 0,
      nonce: '',
      version: '0.1.0',
      build_date: '2025-01-01T00:00:00Z',
      migration: false,
      recovery_seal: false,
      storage_type: 'inmem',
    });
  });

  it('initializes with a single share that is the unseal key itself and unseals with it', async () => {
    const { seal, init } = await initialized({ secret_shares: 1, secret_threshold: 1 });
    expect(init.keys).toHaveLength(1);
    expect(init.keys[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.from(init.keys_base64[0], 'base64').toString('hex')).toBe(init.keys[0]);
    expect(await seal.status()).toMatchObject({ initialized: true, sealed: true, t: 1, n: 1, progress: 0 });

    const result = await seal.submitUnsealKey(init.keys[0]);
    expect(result.status).toMatchObject({ sealed: false, progress: 0, nonce: '' });
    expect(result.keyring?.serialize()).toEqual(init.keyring.serialize());
    expect(seal.keyring?.serialize()).toEqual(init.keyring.serialize());
  });

  it('unseals 3-of-5 with hex and base64 shares, reporting progress under one nonce', async () => {
    const { seal, init } = await initialized({ secret_shares: 5, secret_threshold: 3 });
    expect(init.keys).toHaveLength(5);
    init.keys.forEach((k) => expect(k).toMatch(/^[0-9a-f]{66}$/));
    expect(new Set(init.keys).size).toBe(5);

    const first = await seal.submitUnsealKey(init.keys[4]);
    expect(first.status).toMatchObject({ sealed: true, t: 3, n: 5, progress: 1 });
    expect(first.status.nonce).not.toBe('');
    expect(first.keyring).toBeUndefined();
    const second = await seal.submitUnsealKey(init.keys_base64[1]);
    expect(second.status).toMatchObject({ sealed: true, progress: 2, nonce: first.status.nonce });

    const third = await seal.submitUnsealKey(init.keys[2]);
    expect(third.status).toMatchObject({ sealed: false, progress: 0, nonce: '' });
    expect(third.keyring?.serialize()).toEqual(init.keyring.serialize());
  });

  it('rejects shares that do not form the unseal key and resets progress', async () => {
    const { seal, init } = await initialized({ secret_shares: 3, secret_threshold: 2 });
    const other = await initialized({ secret_shares: 3, secret_threshold: 2 });

    await seal.submitUnsealKey(init.keys[0]);
    const attempt = seal.submitUnsealKey(other.init.keys[1]);
    await expectServiceError(attempt, 'bad-request', /do not form.*unseal key.*progress has been reset/);
    const err = (await attempt.catch((e: ServiceError) => e)) as ServiceError;
    expect(err.message).not.toContain(other.init.keys[1]);
    expect(await seal.status()).toMatchObject({ sealed: true, progress: 0, nonce: '' });

    await seal.submitUnsealKey(init.keys[0]);
    expect((await seal.submitUnsealKey(init.keys[1])).status.sealed).toBe(false);
  });

  it('rejects a share submitted twice in one attempt and keeps the progress', async () => {
    const { seal, init } = await initialized({ secret_shares: 3, secret_threshold: 3 });
    await seal.submitUnsealKey(init.keys[0]);
    await expectServiceError(seal.submitUnsealKey(init.keys_base64[0]), 'bad-request', 'already submitted');
    expect(await seal.status()).toMatchObject({ sealed: true, progress: 1 });
  });

  it('reset discards progress and the next attempt gets a new nonce', async () => {
    const { seal, init } = await initialized({ secret_shares: 3, secret_threshold: 2 });
    const before = (await seal.submitUnsealKey(init.keys[0])).status.nonce;

    const reset = await seal.submitUnsealKey(undefined, true);
    expect(reset.status).toMatchObject({ sealed: true, progress: 0, nonce: '' });

    const next = await seal.submitUnsealKey(init.keys[0]);
    expect(next.status.progress).toBe(1);
    expect(next.status.nonce).not.toBe(before);
    expect((await seal.submitUnsealKey(init.keys[2])).status.sealed).toBe(false);
  });

  it('seal() drops the keyring and the same shares unseal again', async () => {
    const { seal, init } = await initialized({ secret_shares: 2, secret_threshold: 2 });
    await seal.submitUnsealKey(init.keys[0]);
    await seal.submitUnsealKey(init.keys[1]);
    expect(seal.keyring).toBeDefined();

    await seal.seal();
    expect(seal.keyring).toBeUndefined();
    expect(await seal.status()).toMatchObject({ initialized: true, sealed: true, progress: 0 });
    await expectServiceError(seal.persistKeyring(init.keyring), 'sealed', 'sealed');

    await seal.submitUnsealKey(init.keys[1]);
    const again = await seal.submitUnsealKey(init.keys[0]);
    expect(again.keyring?.serialize()).toEqual(init.keyring.serialize());
  });

  it('reloadKeyring picks up a rotation persisted by another process', async () => {
    const { physical, seal, init } = await initialized({ secret_shares: 1, secret_threshold: 1 });
    const peer = new ShamirSeal(physical, BUILD);
    await seal.submitUnsealKey(init.keys[0]);
    await peer.submitUnsealKey(init.keys[0]);
    await peer.persistKeyring(init.keyring.rotate());
    expect(seal.keyring?.activeTerm).toBe(1);
    expect((await seal.reloadKeyring()).activeTerm).toBe(2);
    expect(seal.keyring?.activeTerm).toBe(2);
  });

  it('a process that followed a peer adopts the root key it hands over, and only that one', async () => {
    const { physical, seal, init } = await initialized({ secret_shares: 1, secret_threshold: 1 });
    const follower = new ShamirSeal(physical, BUILD);
    expect(follower.rootKeyCopy()).toBeUndefined();
    await expect(follower.persistKeyring(init.keyring.rotate())).rejects.toBeInstanceOf(ServiceError);
    await seal.submitUnsealKey(init.keys[0]);

    await expect(follower.adoptRootKey(Buffer.alloc(32, 7))).rejects.toThrow('does not open the stored keyring');
    expect(follower.keyring).toBeUndefined();
    const handed = seal.rootKeyCopy()!;
    await follower.adoptRootKey(handed);
    handed.fill(0); // the caller's copy is wiped; the seal kept its own
    await follower.persistKeyring(follower.keyring!.rotate());
    expect((await seal.reloadKeyring()).activeTerm).toBe(2);
  });

  it('stores only the config in clear; root key and keyring are ciphertext', async () => {
    const { physical, init } = await initialized({ secret_shares: 3, secret_threshold: 2 });
    expect(await physical.list('')).toEqual(['core/']);
    expect(await physical.list('core/')).toEqual(['keyring', 'root-key', 'seal-config']);
    expect(JSON.parse((await physical.get(SEAL_STORAGE_KEYS.config))!.toString())).toEqual({
      type: 'shamir',
      secret_shares: 3,
      secret_threshold: 2,
    });
    const storedKeyring = (await physical.get(SEAL_STORAGE_KEYS.keyring))!;
    expect(storedKeyring.includes(init.keyring.active().key)).toBe(false);
    expect(storedKeyring.toString()).not.toContain(init.keyring.active().key.toString('base64'));
  });

  it('refuses a second initialization', async () => {
    const { seal } = await initialized({ secret_shares: 1, secret_threshold: 1 });
    await expectServiceError(seal.initialize({ secret_shares: 1, secret_threshold: 1 }), 'bad-request', 'already initialized');
  });

  it.each([
    [{ secret_shares: 0, secret_threshold: 1 }, /secret_shares must be an integer between 1 and 255/],
    [{ secret_shares: 256, secret_threshold: 2 }, /secret_shares must be an integer between 1 and 255/],
    [{ secret_shares: 2.5, secret_threshold: 2 }, /secret_shares/],
    [{ secret_shares: 3, secret_threshold: 4 }, /secret_threshold must be an integer between 1 and secret_shares \(3\)/],
    [{ secret_shares: 3, secret_threshold: 0 }, /secret_threshold/],
    [{ secret_shares: 3, secret_threshold: 1 }, /secret_threshold must be at least 2 when secret_shares is greater than 1/],
  ])('rejects invalid share settings %j', async (request, message) => {
    const physical = new InmemPhysical();
    await expectServiceError(new ShamirSeal(physical, BUILD).initialize(request), 'bad-request', message);
    expect(await physical.list('')).toEqual([]);
  });

  it('rejects unseal keys before initialization and malformed keys', async () => {
    await expectServiceError(new ShamirSeal(new InmemPhysical(), BUILD).submitUnsealKey('00'), 'bad-request', 'not initialized');
    const { seal } = await initialized({ secret_shares: 3, secret_threshold: 2 });
    await expectServiceError(seal.submitUnsealKey(undefined), 'bad-request', 'key is required unless reset is true');
    await expectServiceError(seal.submitUnsealKey('not a key!'), 'bad-request', 'key must be a hex or base64 string');
    await expectServiceError(seal.submitUnsealKey('abcd'), 'bad-request', 'key must decode to 33 bytes, got 2');
    expect((await seal.status()).progress).toBe(0);
  });
});

describe('ShamirSeal with PGP keys', () => {
  let gnupgHome: string;

  beforeAll(async () => {
    gnupgHome = await mkdtemp(join(tmpdir(), 'svc-gpg-'));
  });

  afterAll(async () => {
    await run('gpgconf', ['--kill', 'gpg-agent'], { env: { ...process.env, GNUPGHOME: gnupgHome } }).catch(() => undefined);
    await rm(gnupgHome, { recursive: true, force: true });
  });

  async function gpg(...args: string[]): Promise<string> {
    const { stdout } = await run('/usr/bin/gpg', ['--batch', '--quiet', ...args], {
      env: { ...process.env, GNUPGHOME: gnupgHome },
    });
    return stdout;
  }

  async function gpgDecryptBase64(base64: string, name: string): Promise<string> {
    const file = join(gnupgHome, name);
    await writeFile(file, Buffer.from(base64, 'base64'));
    return gpg('--decrypt', file);
  }

  it('encrypts each share to its PGP key; gpg decrypts them to hex keys that unseal', async () => {
    const { publicKey, privateKey } = await generateKey({
      userIDs: [{ name: 'Operator', email: 'operator@example.com' }],
      format: 'object',
    });
    const keyFile = join(gnupgHome, 'operator.asc');
    await writeFile(keyFile, privateKey.armor());
    await gpg('--import', keyFile);
    const publicKeyBase64 = Buffer.from(publicKey.write()).toString('base64');

    const { physical, seal, init } = await initialized({
      secret_shares: 3,
      secret_threshold: 2,
      pgp_keys: [publicKeyBase64, publicKeyBase64, publicKeyBase64],
    });
    expect(JSON.parse((await physical.get(SEAL_STORAGE_KEYS.config))!.toString()).pgp_fingerprints).toEqual(
      Array(3).fill(publicKey.getFingerprint()),
    );
    expect(Buffer.from(init.keys[0], 'hex')).toEqual(Buffer.from(init.keys_base64[0], 'base64'));

    const shareA = await gpgDecryptBase64(init.keys_base64[0], 'share0.gpg');
    const shareB = await gpgDecryptBase64(init.keys_base64[2], 'share2.gpg');
    expect(shareA).toMatch(/^[0-9a-f]{66}$/);
    await seal.submitUnsealKey(shareA);
    const result = await seal.submitUnsealKey(shareB);
    expect(result.status.sealed).toBe(false);
    expect(result.keyring?.serialize()).toEqual(init.keyring.serialize());

    const rootToken = await encryptRootToken(publicKeyBase64, 'svc.example-root-token');
    expect(await gpgDecryptBase64(rootToken, 'root-token.gpg')).toBe('svc.example-root-token');
  });

  it('rejects a bad PGP key naming its entry, or a count mismatch, and writes nothing', async () => {
    const { publicKey } = await generateKey({ userIDs: [{ name: 'Operator' }], format: 'object' });
    const good = Buffer.from(publicKey.write()).toString('base64');
    const physical = new InmemPhysical();
    const seal = new ShamirSeal(physical, BUILD);

    await expectServiceError(
      seal.initialize({ secret_shares: 3, secret_threshold: 2, pgp_keys: [good, good, 'bm90IGEga2V5'] }),
      'bad-request',
      'pgp_keys[2] is not a valid PGP public key',
    );
    await expectServiceError(
      seal.initialize({ secret_shares: 3, secret_threshold: 2, pgp_keys: [good, good] }),
      'bad-request',
      'pgp_keys must have one entry per share: got 2, secret_shares is 3',
    );
    await expectServiceError(encryptRootToken('bm90IGEga2V5', 'token'), 'bad-request', 'root_token_pgp_key is not a valid PGP public key');
    expect(await physical.list('')).toEqual([]);
    expect((await seal.status()).initialized).toBe(false);
  });
});

const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

describe.each([
  { name: 'inmem', create: async () => ({ physical: new InmemPhysical() as Physical, cleanup: async (): Promise<void> => undefined }) },
  {
    name: 'postgresql',
    create: async () => {
      const table = `seal_test_${randomUUID().replace(/-/g, '')}`;
      const physical = new PostgresPhysical({ connectionUrl: POSTGRES_URL, table, maxConnections: 2 });
      await physical.open();
      const cleanup = async () => {
        await physical.close();
        await dropTable(table);
      };
      return { physical, cleanup };
    },
  },
])('ShamirSeal over $name storage', ({ create }) => {
  let physical: Physical;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ physical, cleanup } = await create());
  });

  afterEach(() => cleanup());

  it('keeps the keyring across a new instance over the same storage, including a rotation', async () => {
    const { seal, init } = await initialized({ secret_shares: 3, secret_threshold: 2 }, physical);
    await seal.submitUnsealKey(init.keys[0]);
    await seal.submitUnsealKey(init.keys[1]);
    const rotated = init.keyring.rotate();
    await seal.persistKeyring(rotated);
    expect(seal.keyring).toBe(rotated);

    const restarted = new ShamirSeal(physical, BUILD);
    expect(await restarted.status()).toMatchObject({ initialized: true, sealed: true, t: 2, n: 3 });
    await restarted.submitUnsealKey(init.keys[2]);
    const { keyring } = await restarted.submitUnsealKey(init.keys[0]);
    expect(keyring?.activeTerm).toBe(2);
    expect(keyring?.serialize()).toEqual(rotated.serialize());
    expect(keyring?.term(1)?.key).toEqual(init.keyring.term(1)?.key);
  });

  it('lets only one of two concurrent initializations succeed', async () => {
    const request = { secret_shares: 1, secret_threshold: 1 };
    const outcomes = await Promise.allSettled([
      new ShamirSeal(physical, BUILD).initialize(request),
      new ShamirSeal(physical, BUILD).initialize(request),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const [winner] = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const unsealed = await new ShamirSeal(physical, BUILD).submitUnsealKey(winner.keys[0]);
    expect(unsealed.keyring?.serialize()).toEqual(winner.keyring.serialize());
  });
});
