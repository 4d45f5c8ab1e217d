import { ServiceError } from '@svc/api-contract';
import { InmemPhysical } from '@svc/storage';
import { MigratingSeal, createConfiguredSeal } from './migration';
import { AutoSeal, SEAL_STORAGE_KEYS, ShamirSeal } from './seal';
import { LocalProvider } from './testing/local-provider';

const BUILD = { version: '0.1.0', buildDate: '2025-01-01T00:00:00Z' };

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServiceError);
  return (err as ServiceError).errors.join('\n');
}

/** Gives `shares` to `seal` one at a time; the last answer. */
async function submitAll(seal: { submitUnsealKey(key: string): Promise<{ keyring?: unknown }> }, shares: string[]) {
  let last: { keyring?: unknown } = {};
  for (const share of shares) last = await seal.submitUnsealKey(share);
  return last;
}

describe('MigratingSeal', () => {
  it('shamir → auto-unseal: unseal shares migrate the root key to the provider and become the recovery shares', async () => {
    const physical = new InmemPhysical();
    const init = await new ShamirSeal(physical, BUILD).initialize({ secret_shares: 3, secret_threshold: 2 });
    const provider = new LocalProvider('pkcs11');
    const seal = new MigratingSeal(physical, BUILD, provider, undefined);

    expect(await seal.status()).toMatchObject({ type: 'shamir', sealed: true, migration: true, recovery_seal: true, t: 2, n: 3, progress: 0 });
    expect(await seal.submitUnsealKey(init.keys[0])).toMatchObject({ status: { migration: true, progress: 1 } });
    const done = await seal.submitUnsealKey(init.keys[2]);
    expect(done.keyring?.serialize().equals(init.keyring.serialize())).toBe(true);
    expect(await seal.status()).toMatchObject({ type: 'pkcs11', sealed: false, migration: false, recovery_seal: true, t: 2, n: 3 });

    // From now on the provider opens it, and the old unseal shares authorize as recovery shares.
    const restarted = new AutoSeal(physical, BUILD, provider);
    expect((await restarted.unsealAutomatically()).serialize().equals(init.keyring.serialize())).toBe(true);
    await expect(restarted.authorityKeys.verify(init.keys.slice(1).map((key) => Buffer.from(key, 'hex')))).resolves.toBeUndefined();
    expect(await refusal(new ShamirSeal(physical, BUILD).submitUnsealKey(init.keys[0]))).toMatch(/initialized with the pkcs11 seal.*disabled = "true"/);
  });

  it('auto-unseal → shamir: recovery shares, checked against the old provider, become the unseal shares', async () => {
    const physical = new InmemPhysical();
    const old = new LocalProvider('transit');
    const init = await new AutoSeal(physical, BUILD, old).initialize({ recovery_shares: 3, recovery_threshold: 2 });
    const recovery = init.recovery_keys ?? [];
    const seal = createConfiguredSeal(physical, BUILD, undefined, old);
    expect(await seal.status()).toMatchObject({ type: 'transit', migration: true, recovery_seal: false, t: 2, n: 3 });

    old.reachable = false;
    expect(await refusal(submitAll(seal, recovery.slice(0, 2)))).toMatch(/the transit seal being migrated from could not decrypt the root key: transit provider unreachable; the migration did not happen/);
    old.reachable = true;
    expect(await seal.status()).toMatchObject({ migration: true, progress: 0 });

    const other = await new AutoSeal(new InmemPhysical(), BUILD, old).initialize({ recovery_shares: 3, recovery_threshold: 2 });
    expect(await refusal(submitAll(seal, (other.recovery_keys ?? []).slice(0, 2)))).toMatch(/do not form this service's recovery key; progress has been reset/);
    expect(await physical.get(SEAL_STORAGE_KEYS.recoveryKey)).not.toBeNull();

    expect((await submitAll(seal, [recovery[1], recovery[2]])).keyring).toBeDefined();
    expect(await seal.status()).toMatchObject({ type: 'shamir', sealed: false, migration: false, recovery_seal: false, t: 2, n: 3 });
    expect(await physical.get(SEAL_STORAGE_KEYS.recoveryKey)).toBeNull();
    const shamir = new ShamirSeal(physical, BUILD);
    expect((await submitAll(shamir, [recovery[0], recovery[2]])).keyring).toBeDefined();
  });

  it('auto-unseal → another auto-unseal seal keeps the recovery key', async () => {
    const physical = new InmemPhysical();
    const transit = new LocalProvider('transit');
    const init = await new AutoSeal(physical, BUILD, transit).initialize({ recovery_shares: 2, recovery_threshold: 2 });
    const hsm = new LocalProvider('pkcs11');
    const seal = createConfiguredSeal(physical, BUILD, hsm, transit);
    expect((await submitAll(seal, init.recovery_keys ?? [])).keyring).toBeDefined();
    const restarted = new AutoSeal(physical, BUILD, hsm);
    await restarted.unsealAutomatically();
    await expect(restarted.authorityKeys.verify((init.recovery_keys ?? []).map((key) => Buffer.from(key, 'hex')))).resolves.toBeUndefined();
  });

  it('outside a migration it is the configured seal; a duplicate share and a missing key are refused', async () => {
    const physical = new InmemPhysical();
    const provider = new LocalProvider('pkcs11');
    const seal = createConfiguredSeal(physical, BUILD, provider, undefined);
    await seal.initialize({ recovery_shares: 1, recovery_threshold: 1 });
    expect(await seal.status()).toMatchObject({ type: 'pkcs11', migration: false });
    await seal.unsealAutomatically();
    expect(seal.keyring).toBeDefined();

    const shamirStorage = new InmemPhysical();
    const init = await new ShamirSeal(shamirStorage, BUILD).initialize({ secret_shares: 2, secret_threshold: 2 });
    const migrating = createConfiguredSeal(shamirStorage, BUILD, provider, undefined);
    await migrating.submitUnsealKey(init.keys[0]);
    expect(await refusal(migrating.submitUnsealKey(init.keys[0]))).toBe('this key share was already submitted in the current unseal attempt');
    expect(await refusal(migrating.submitUnsealKey(''))).toBe('key is required unless reset is true');
    expect((await migrating.submitUnsealKey(undefined, true)).status).toMatchObject({ migration: true, progress: 0 });
  });
});
