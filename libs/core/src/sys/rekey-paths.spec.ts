import { Backend, type Operation } from '@svc/framework';
import { Rekey, ShamirSeal } from '@svc/seal';
import { InmemPhysical, createView } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { generateKey } from 'openpgp';
import { KeyCeremonies } from '../seal/key-ceremonies';
import { rekeyPaths, type RekeyPathsDeps } from './rekey-paths';

const BUILD = { version: 'test', buildDate: '2025-01-01T00:00:00Z' };
type Body = Record<string, unknown>;

/** Keys split into 3 shares, 2 of which authorize: a Shamir seal's unseal keys. */
async function splitKeys(): Promise<{ seal: ShamirSeal; physical: InmemPhysical; keys: string[] }> {
  const physical = new InmemPhysical();
  const seal = new ShamirSeal(physical, BUILD);
  const { keys } = await seal.initialize({ secret_shares: 3, secret_threshold: 2 });
  return { seal, physical, keys };
}

/** The status of a rekey not started, while the keys in force need `required` shares. */
const notStarted = (required: number) => ({ started: false, nonce: '', t: 0, n: 0, progress: 0, required, pgp_fingerprints: null, backup: false, verification_required: false });

function systemBackend(deps: RekeyPathsDeps): MountedBackend {
  const mount = testMount('system', { path: 'sys/' });
  return new MountedBackend(new Backend({ type: 'system', help: 'Rekeys.', paths: rekeyPaths(deps) }), mount, mountStorage(mount));
}

describe('sys/rekey and sys/rekey-recovery-key', () => {
  let sys: MountedBackend;
  let unsealKeys: string[];
  /** The shares of a second set of keys, standing for an auto-unseal seal's recovery keys. */
  let recoveryKeys: string[];

  /** The raw body of an answer, as the client receives it (not in an envelope). */
  const raw = async (operation: Operation, path: string, data: Body = {}) => (await sys.request(operation, path, data))?.raw as Body | undefined;
  /** Submits the first two of `shares` to the rekey in progress at `prefix`: the threshold. */
  const submitThreshold = async (prefix: string, shares: string[], nonce: unknown): Promise<Body> => {
    expect(await raw('update', `${prefix}/update`, { key: shares[0], nonce })).toMatchObject({ started: true, progress: 1 });
    return (await raw('update', `${prefix}/update`, { key: shares[1], nonce }))!;
  };
  /** Starts a rekey at `prefix` and submits the threshold of `shares`: the completion. */
  const rekeyed = async (prefix: string, shares: string[], start: Body): Promise<Body> => submitThreshold(prefix, shares, (await raw('update', `${prefix}/init`, start))!.nonce);

  beforeEach(async () => {
    const unseal = await splitKeys();
    const recovery = await splitKeys();
    [unsealKeys, recoveryKeys] = [unseal.keys, recovery.keys];
    const store = createView(unseal.physical, 'core/');
    const unsealRekey = new Rekey(store, 'rekey/unseal-keys', 'unseal-keys-backup', unseal.seal.authorityKeys);
    const recoveryRekey = new Rekey(store, 'rekey/recovery-keys', 'recovery-keys-backup', recovery.seal.authorityKeys);
    sys = systemBackend({ ceremonies: { unsealRekey: () => unsealRekey, recoveryRekey: () => recoveryRekey } });
  });

  it('replaces the unseal keys: the threshold of current shares returns the new ones', async () => {
    expect(await raw('read', 'rekey/init')).toEqual(notStarted(2));
    const started = await raw('update', 'rekey/init', { secret_shares: 5, secret_threshold: 3 });
    expect(started).toEqual({ ...notStarted(2), started: true, nonce: expect.any(String), t: 3, n: 5 });
    expect(await raw('read', 'rekey/init')).toEqual(started);

    const done = await submitThreshold('rekey', unsealKeys, started!.nonce);
    expect(done).toEqual({ ...started, progress: 0, complete: true, keys: expect.any(Array), keys_base64: expect.any(Array) });
    expect(done.keys).toHaveLength(5);
    expect((done.keys_base64 as string[]).map((key) => Buffer.from(key, 'base64').toString('hex'))).toEqual(done.keys);
    // The new split is in force: the next rekey needs 3 of the new shares.
    expect(await raw('read', 'rekey/init')).toEqual(notStarted(3));
    expect(await raw('read', 'rekey-recovery-key/init')).toEqual(notStarted(2));
  });

  it('replaces the recovery keys through sys/rekey-recovery-key', async () => {
    const done = await rekeyed('rekey-recovery-key', recoveryKeys, { secret_shares: 4, secret_threshold: 4 });
    expect(done).toMatchObject({ complete: true, t: 4, n: 4 });
    expect(done.keys).toHaveLength(4);
    expect(await raw('read', 'rekey-recovery-key/init')).toEqual(notStarted(4));
    expect(await raw('read', 'rekey/init')).toEqual(notStarted(2));
  });

  it('with require_verification, rotates only once a threshold of the new shares came back', async () => {
    const done = await rekeyed('rekey', unsealKeys, { secret_shares: 3, secret_threshold: 3, require_verification: true });
    expect(done).toMatchObject({ complete: true, verification_required: true, verification_nonce: expect.any(String) });
    const [first, second, third] = done.keys as string[];
    const nonce = done.verification_nonce;
    expect(await raw('read', 'rekey/init')).toMatchObject({ started: true, required: 2, verification_nonce: nonce });
    expect(await raw('read', 'rekey/verify')).toEqual({ started: true, nonce, t: 3, n: 3, progress: 0 });
    expect(await raw('update', 'rekey/verify', { key: first, nonce })).toEqual({ started: true, nonce, t: 3, n: 3, progress: 1 });

    // Deleting restarts the verification: a new nonce, progress 0.
    const restarted = (await raw('delete', 'rekey/verify'))!;
    expect(restarted).toEqual({ started: true, nonce: expect.any(String), t: 3, n: 3, progress: 0 });
    expect(restarted.nonce).not.toBe(nonce);
    await raw('update', 'rekey/verify', { key: third, nonce: restarted.nonce });
    await raw('update', 'rekey/verify', { key: first, nonce: restarted.nonce });
    expect(await raw('read', 'rekey/init')).toMatchObject({ required: 2 });
    expect(await raw('update', 'rekey/verify', { key: second, nonce: restarted.nonce })).toEqual({ nonce: restarted.nonce, complete: true });
    expect(await raw('read', 'rekey/verify')).toEqual({ started: false, nonce: '', t: 0, n: 0, progress: 0 });
    expect(await raw('read', 'rekey/init')).toEqual(notStarted(3));
  });

  it('cancels a rekey with no content in the answer; the current keys stay in force', async () => {
    const { nonce } = (await raw('update', 'rekey/init', { secret_shares: 1, secret_threshold: 1 }))!;
    await raw('update', 'rekey/update', { key: unsealKeys[0], nonce });
    expect(await sys.request('delete', 'rekey/init')).toBeUndefined();
    expect(await raw('read', 'rekey/init')).toEqual(notStarted(2));
    expect(await refusal(raw('update', 'rekey/update', { key: unsealKeys[1], nonce }))).toEqual({ status: 400, message: 'no rekey is in progress' });
  });

  it('keeps the PGP-encrypted new shares of a rekey with backup for the backup endpoints, until deleted', async () => {
    const { publicKey } = await generateKey({ userIDs: [{ name: 'operator' }], format: 'object' });
    const pgpKey = Buffer.from(publicKey.write()).toString('base64');
    const fingerprint = publicKey.getFingerprint();
    expect(await sys.read('rekey/backup')).toBeUndefined();

    // pgp_keys is a comma-separated list, one key per new share.
    const unsealDone = await rekeyed('rekey', unsealKeys, { secret_shares: 2, secret_threshold: 2, pgp_keys: `${pgpKey},${pgpKey}`, backup: true });
    expect(unsealDone).toMatchObject({ complete: true, backup: true, pgp_fingerprints: [fingerprint, fingerprint] });
    expect(await sys.read('rekey/backup')).toEqual({ nonce: unsealDone.nonce, keys: { [fingerprint]: unsealDone.keys } });

    const recoveryDone = await rekeyed('rekey-recovery-key', recoveryKeys, { secret_shares: 2, secret_threshold: 2, pgp_keys: [pgpKey, pgpKey], backup: true });
    const recoveryBackup = { nonce: recoveryDone.nonce, keys: { [fingerprint]: recoveryDone.keys } };
    expect(await sys.read('rekey/recovery-key-backup')).toEqual(recoveryBackup);
    expect(await sys.read('rekey-recovery-key/backup')).toEqual(recoveryBackup);

    expect(await sys.request('delete', 'rekey/backup')).toBeUndefined();
    expect(await sys.read('rekey/backup')).toBeUndefined();
    expect(await sys.read('rekey/recovery-key-backup')).toEqual(recoveryBackup);
    await sys.request('delete', 'rekey-recovery-key/backup');
    expect(await sys.read('rekey/recovery-key-backup')).toBeUndefined();
  });

  it('refuses a start without a valid split, a backup without PGP keys, and shares without key or the right nonce', async () => {
    expect(await refusal(raw('update', 'rekey/init', {}))).toEqual({ status: 400, message: 'secret_shares must be an integer between 1 and 255' });
    expect(await refusal(raw('update', 'rekey/init', { secret_shares: 3, secret_threshold: 5 }))).toEqual({
      status: 400,
      message: 'secret_threshold must be an integer between 1 and secret_shares (3)',
    });
    expect(await refusal(raw('update', 'rekey/init', { secret_shares: 3, secret_threshold: 2, backup: true }))).toEqual({
      status: 400,
      message: 'backup requires pgp_keys: only PGP-encrypted shares are backed up',
    });

    const { nonce } = (await raw('update', 'rekey/init', { secret_shares: 3, secret_threshold: 2 }))!;
    expect(await refusal(raw('update', 'rekey/update', { nonce }))).toEqual({ status: 400, message: 'missing required field "key"' });
    expect(await refusal(raw('update', 'rekey/verify', { key: unsealKeys[0] }))).toEqual({ status: 400, message: 'missing required field "nonce"' });
    expect(await refusal(raw('update', 'rekey/update', { key: unsealKeys[0], nonce: 'another' }))).toEqual({
      status: 400,
      message: 'nonce does not match the current rekey (see its status for the nonce)',
    });
    expect(await refusal(raw('update', 'rekey/init', { secret_shares: 3, secret_threshold: 2 }))).toEqual({ status: 400, message: 'a rekey is already in progress; cancel it to start another' });
    expect(await refusal(raw('update', 'rekey/verify', { key: unsealKeys[0], nonce }))).toEqual({ status: 400, message: 'no rekey verification is in progress' });
    expect(await refusal(raw('delete', 'rekey/verify'))).toEqual({ status: 400, message: 'no rekey verification is in progress' });
  });

  it('serves the ceremonies without a token, the backups to sudo tokens of the root namespace', () => {
    for (const prefix of ['rekey', 'rekey-recovery-key']) {
      for (const [path, operations] of [
        ['init', ['read', 'update', 'delete']],
        ['update', ['update']],
        ['verify', ['read', 'update', 'delete']],
      ] as const) {
        for (const operation of operations) expect(sys.backend.operationInfo(`${prefix}/${path}`, operation)).toMatchObject({ unauthenticated: true, sudo: false });
      }
    }
    for (const path of ['rekey/backup', 'rekey/recovery-key-backup', 'rekey-recovery-key/backup']) {
      for (const operation of ['read', 'delete'] as const) expect(sys.backend.operationInfo(path, operation)).toMatchObject({ unauthenticated: false, sudo: true, rootNamespace: true });
    }
  });
});

describe('sys/rekey-recovery-key on a Shamir seal', () => {
  it('is refused, as the Shamir seal has no recovery keys, while sys/rekey serves its unseal keys', async () => {
    const { seal, physical } = await splitKeys();
    const sys = systemBackend({ ceremonies: new KeyCeremonies(seal, createView(physical, 'core/'), async () => 'unused') });
    const noRecoveryKeys = {
      status: 400,
      message: 'the shamir seal has no recovery keys: recovery-key rekey needs an auto-unseal seal; use sys/rekey for the unseal keys',
    };
    expect(await refusal(sys.request('read', 'rekey-recovery-key/init'))).toEqual(noRecoveryKeys);
    expect(await refusal(sys.request('update', 'rekey-recovery-key/init', { secret_shares: 1, secret_threshold: 1 }))).toEqual(noRecoveryKeys);
    expect(await refusal(sys.read('rekey-recovery-key/backup'))).toEqual(noRecoveryKeys);
    expect((await sys.request('read', 'rekey/init'))?.raw).toEqual(notStarted(2));
  });
});
