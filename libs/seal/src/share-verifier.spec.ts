import { ServiceError } from '@svc/api-contract';
import { InmemPhysical } from '@svc/storage';
import { LocalProvider } from './testing/local-provider';
import { Rekey } from './rekey';
import { AutoSeal, ShamirSeal, type Seal } from './seal';
import { checkShareVerifier, verifierAuthority, type ShareVerifier } from './share-verifier';

const BUILD = { version: '0.1.0', buildDate: '2025-01-01T00:00:00Z' };

const hex = (keys: string[]) => keys.map((key) => Buffer.from(key, 'hex'));

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServiceError);
  return (err as ServiceError).errors.join('\n');
}

/** A Shamir seal, unsealed, with its shares. */
async function shamir(): Promise<{ seal: ShamirSeal; keys: string[] }> {
  const seal = new ShamirSeal(new InmemPhysical(), BUILD);
  const { keys } = await seal.initialize({ secret_shares: 3, secret_threshold: 2 });
  for (const key of keys.slice(0, 2)) await seal.submitUnsealKey(key);
  return { seal, keys };
}

async function auto(): Promise<{ seal: AutoSeal; keys: string[] }> {
  const seal = new AutoSeal(new InmemPhysical(), BUILD, new LocalProvider());
  const init = await seal.initialize({ recovery_shares: 3, recovery_threshold: 2 });
  await seal.unsealAutomatically();
  return { seal, keys: init.recovery_keys ?? [] };
}

/** The verifier as another cluster keeps it: through JSON, as it crosses the cluster link. */
async function carried(seal: Seal): Promise<ShareVerifier> {
  return checkShareVerifier(JSON.parse(JSON.stringify(await seal.shareVerifier())));
}

describe.each([
  ['shamir (unseal shares)', shamir, 'unseal'],
  ['auto-unseal (recovery shares)', auto, 'recovery'],
] as const)('share verifier of a %s seal', (_name, make, kind) => {
  it('accepts the seal\'s shares elsewhere and refuses another seal\'s', async () => {
    const { seal, keys } = await make();
    const verifier = await carried(seal);
    expect(verifier).toMatchObject({ kind, shares: 3, threshold: 2 });
    const authority = verifierAuthority(async () => verifier, "the primary's");
    expect(await authority.split()).toEqual({ shares: 3, threshold: 2 });
    await expect(authority.verify(hex(keys.slice(1, 3)))).resolves.toBeUndefined();
    const other = await make();
    expect(await refusal(authority.verify(hex(other.keys.slice(0, 2))))).toMatch(new RegExp(`do not form the primary's ${kind} key`));
  });

  it('changes with a rekey: the old shares are refused by the new verifier', async () => {
    const { seal, keys } = await make();
    const before = await carried(seal);
    const rekey = new Rekey(new InmemPhysical(), 'rekey', 'backup', seal.authorityKeys);
    const started = await rekey.start({ secret_shares: 2, secret_threshold: 2 });
    let fresh: string[] = [];
    for (const key of keys.slice(0, 2)) {
      const step = await rekey.update(key, started.nonce);
      if ('keys' in step && step.keys) fresh = step.keys;
    }
    const after = await carried(seal);
    expect(after).not.toEqual(before);
    const authority = verifierAuthority(async () => after, "the primary's");
    await expect(authority.verify(hex(fresh))).resolves.toBeUndefined();
    expect(await refusal(authority.verify(hex(keys.slice(0, 2))))).toMatch(/do not form/);
  });
});

it('a malformed verifier is refused', () => {
  expect(() => checkShareVerifier({ kind: 'unseal', shares: 0, threshold: 1, check: '' })).toThrow(/malformed/);
  expect(() => checkShareVerifier(null)).toThrow(/malformed/);
});
