import { ServiceError } from '@svc/api-contract';
import { InmemPhysical } from '@svc/storage';
import { aeadDecrypt } from './aead';
import { SealUnavailableError } from './key-wrapper';
import { LocalProvider } from './testing/local-provider';
import { Rekey } from './rekey';
import { AutoSeal, SEAL_STORAGE_KEYS, ShamirSeal } from './seal';
import { GenerateRoot } from './generate-root';

const BUILD = { version: '0.1.0', buildDate: '2025-01-01T00:00:00Z' };
const ROOT_TOKEN = 'svc.generated-root-token-0000000';

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServiceError);
  return (err as ServiceError).errors.join('\n');
}

async function setUp() {
  const physical = new InmemPhysical();
  const provider = new LocalProvider();
  const seal = new AutoSeal(physical, BUILD, provider);
  const init = await seal.initialize({ recovery_shares: 3, recovery_threshold: 2 });
  return { physical, provider, seal, init, recoveryKeys: init.recovery_keys ?? [] };
}

describe('AutoSeal', () => {
  it('initializes with recovery keys and reports the provider type and recovery_seal', async () => {
    const { seal, init } = await setUp();
    expect(init.keys).toEqual([]);
    expect(init.recovery_keys).toHaveLength(3);
    expect(init.recovery_keys_base64).toHaveLength(3);
    expect(await seal.status()).toMatchObject({ type: 'transit', initialized: true, sealed: true, t: 2, n: 3, recovery_seal: true });
  });

  it('unseals through the provider, across a new instance over the same storage', async () => {
    const { physical, provider, seal } = await setUp();
    const keyring = await seal.unsealAutomatically();
    expect((await seal.status()).sealed).toBe(false);
    const again = new AutoSeal(physical, BUILD, provider);
    expect((await again.unsealAutomatically()).serialize().equals(keyring.serialize())).toBe(true);
  });

  it('stays sealed with SealUnavailableError while the provider is unreachable, and unseals when it returns', async () => {
    const { provider, seal } = await setUp();
    provider.reachable = false;
    await expect(seal.unsealAutomatically()).rejects.toBeInstanceOf(SealUnavailableError);
    expect((await seal.status()).sealed).toBe(true);
    provider.reachable = true;
    await seal.unsealAutomatically();
    expect((await seal.status()).sealed).toBe(false);
  });

  it('never unseals with recovery keys', async () => {
    const { seal, recoveryKeys } = await setUp();
    expect(await refusal(seal.submitUnsealKey(recoveryKeys[0]))).toMatch(/recovery keys cannot unseal/);
  });

  it('stores the root key only as the provider wrapped it', async () => {
    const { physical, provider } = await setUp();
    const stored = await physical.get(SEAL_STORAGE_KEYS.rootKey);
    expect((await provider.unwrap(stored ?? Buffer.alloc(0))).length).toBe(32);
  });

  it('refuses unseal-key fields, and missing or bad recovery fields, naming them', async () => {
    const seal = new AutoSeal(new InmemPhysical(), BUILD, new LocalProvider());
    expect(await refusal(seal.initialize({ secret_shares: 5, secret_threshold: 3, recovery_shares: 1, recovery_threshold: 1 }))).toMatch(/give recovery_shares/);
    expect(await refusal(seal.initialize({ recovery_threshold: 1 }))).toMatch(/missing required field "recovery_shares"/);
    expect(await refusal(seal.initialize({ recovery_shares: 3, recovery_threshold: 1 }))).toMatch(/recovery_threshold must be at least 2/);
    expect((await seal.status()).initialized).toBe(false);
  });

  it('recovery shares authorize generate-root; other shares do not', async () => {
    const { seal, recoveryKeys } = await setUp();
    await seal.unsealAutomatically();
    const physical = new InmemPhysical();
    const generateRoot = new GenerateRoot(physical, 'generate-root', () => seal.authorityKeys, async () => ROOT_TOKEN, ROOT_TOKEN.length);
    const started = await generateRoot.start(undefined);
    const other = await setUp();
    await generateRoot.update(other.recoveryKeys[0], started.nonce);
    expect(await refusal(generateRoot.update(other.recoveryKeys[1], started.nonce))).toMatch(/do not form/);
    await generateRoot.update(recoveryKeys[0], started.nonce);
    const done = await generateRoot.update(recoveryKeys[2], started.nonce);
    expect(done.complete).toBe(true);
  });

  it('a recovery-key rekey replaces the recovery keys: the old fail, the new authorize', async () => {
    const { seal, physical, recoveryKeys } = await setUp();
    await seal.unsealAutomatically();
    const rekey = new Rekey(physical, 'rekey/recovery-keys', 'recovery-keys-backup', seal.authorityKeys);
    const started = await rekey.start({ secret_shares: 2, secret_threshold: 2 });
    await rekey.update(recoveryKeys[1], started.nonce);
    const done = await rekey.update(recoveryKeys[0], started.nonce);
    if (!('keys' in done)) throw new Error('rekey did not complete');
    expect(await seal.status()).toMatchObject({ t: 2, n: 2, sealed: false });

    const next = await rekey.start({ secret_shares: 1, secret_threshold: 1 });
    await rekey.update(recoveryKeys[0], next.nonce);
    expect(await refusal(rekey.update(recoveryKeys[1], next.nonce))).toMatch(/do not form/);
    await rekey.update(done.keys[0], next.nonce);
    expect(await rekey.update(done.keys[1], next.nonce)).toMatchObject({ complete: true });
  });

  it('sys/rekey rotates the root key with recovery shares: nothing handed out, the keyring kept, a peer follows', async () => {
    const { seal, physical, provider, recoveryKeys } = await setUp();
    const keyring = await seal.unsealAutomatically();
    const peer = new AutoSeal(physical, BUILD, provider);
    await peer.unsealAutomatically();
    const before = await physical.get(SEAL_STORAGE_KEYS.rootKey);
    const rekey = new Rekey(physical, 'rekey/root-key', 'unseal-keys-backup', seal.rootKeyRotation ?? seal.authorityKeys);
    for (const refused of [{ pgp_keys: ['a2V5'] }, { backup: true }, { require_verification: true }]) {
      expect(await refusal(rekey.start(refused))).toMatch(/not supported when rekeying the root key with recovery keys/);
    }
    const started = await rekey.start({ secret_shares: 5, secret_threshold: 3 });
    expect(started).toMatchObject({ t: 1, n: 1, required: 2 });
    await rekey.update(recoveryKeys[0], started.nonce);
    expect(await rekey.update(recoveryKeys[2], started.nonce)).toMatchObject({ complete: true, keys: [], keys_base64: [] });

    const after = await physical.get(SEAL_STORAGE_KEYS.rootKey);
    expect(after?.equals(before ?? Buffer.alloc(0))).toBe(false);
    const rootKey = await provider.unwrap(after ?? Buffer.alloc(0));
    expect(aeadDecrypt(rootKey, (await physical.get(SEAL_STORAGE_KEYS.keyring)) ?? Buffer.alloc(0), SEAL_STORAGE_KEYS.keyring).equals(keyring.serialize())).toBe(true);
    // The peer opened with the old root key; what it writes now is under the new one.
    await peer.persistKeyring(keyring);
    expect((await new AutoSeal(physical, BUILD, provider).unsealAutomatically()).serialize().equals(keyring.serialize())).toBe(true);
    // The recovery key moved with it: the same shares still authorize, on either process.
    const again = await rekey.start({});
    await rekey.update(recoveryKeys[1], again.nonce);
    expect(await rekey.update(recoveryKeys[2], again.nonce)).toMatchObject({ complete: true });
    await expect(peer.authorityKeys.verify(recoveryKeys.slice(0, 2).map((key) => Buffer.from(key, 'hex')))).resolves.toBeUndefined();
  });
});

describe('a seal over storage initialized by the other kind', () => {
  it('says which seal initialized the storage', async () => {
    const { physical, provider } = await setUp();
    expect(await refusal(new ShamirSeal(physical, BUILD).status())).toMatch(/initialized with the transit seal but the configuration names the shamir seal/);
    const shamirStorage = new InmemPhysical();
    await new ShamirSeal(shamirStorage, BUILD).initialize({ secret_shares: 1, secret_threshold: 1 });
    await expect(new AutoSeal(shamirStorage, BUILD, provider).unsealAutomatically()).rejects.toThrow(/initialized with the shamir seal but the configuration names the transit seal/);
  });
});
