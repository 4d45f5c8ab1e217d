import { Backend } from '@svc/framework';
import { decodeOtpToken } from '@svc/sdk';
import { ShamirSeal } from '@svc/seal';
import { InmemPhysical, createView } from '@svc/storage';
import { generationNotStarted, MountedBackend, mountStorage, refusal, testMount } from '@svc/testing';
import { generateKey } from 'openpgp';
import { KeyCeremonies } from '../seal/key-ceremonies';
import { SERVICE_TOKEN_LENGTH } from '../tokens/token-store';
import { generateRootPaths } from './generate-root-paths';

const notStartedGeneration = generationNotStarted(SERVICE_TOKEN_LENGTH);

const ROOT_TOKEN = 'svs.'.padEnd(SERVICE_TOKEN_LENGTH, 'r');

describe('sys/generate-root', () => {
  let sys: MountedBackend;
  /** The unseal key shares: 3, any 2 of which authorize. */
  let keys: string[];

  /** The raw body of an answer, as the client receives it (not in an envelope). */
  const raw = async (operation: 'read' | 'update' | 'delete', path: string, data: Record<string, unknown> = {}) => (await sys.request(operation, path, data))?.raw as Record<string, unknown> | undefined;

  beforeEach(async () => {
    const physical = new InmemPhysical();
    const seal = new ShamirSeal(physical, { version: 'test', buildDate: '2025-01-01T00:00:00Z' });
    ({ keys } = await seal.initialize({ secret_shares: 3, secret_threshold: 2 }));
    const ceremonies = new KeyCeremonies(seal, createView(physical, 'core/'), async () => ROOT_TOKEN);
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'Root generation.', paths: generateRootPaths({ ceremonies }) }), mount, mountStorage(mount));
  });

  it('generates a root token from a threshold of shares, handed out XORed with the one-time pad shown at the start', async () => {
    expect(await raw('read', 'generate-root/attempt')).toEqual(notStartedGeneration);
    const started = (await raw('update', 'generate-root/attempt'))!;
    expect(started).toEqual({ ...notStartedGeneration, started: true, nonce: expect.any(String), otp: expect.any(String) });
    expect(started.otp).toHaveLength(SERVICE_TOKEN_LENGTH);
    // The pad is shown once: a read does not repeat it.
    expect(await raw('read', 'generate-root/attempt')).toEqual({ ...notStartedGeneration, started: true, nonce: started.nonce });

    expect(await raw('update', 'generate-root/update', { key: keys[2], nonce: started.nonce })).toMatchObject({ started: true, progress: 1, complete: false });
    const done = (await raw('update', 'generate-root/update', { key: keys[0], nonce: started.nonce }))!;
    expect(done).toMatchObject({ progress: 2, complete: true });
    expect(decodeOtpToken(String(done.encoded_token), String(started.otp))).toBe(ROOT_TOKEN);
    expect(done.encoded_root_token).toBe(done.encoded_token);
    expect(await raw('read', 'generate-root/attempt')).toEqual(notStartedGeneration);
  });

  it('encrypts the token to a PGP key given at the start instead (an empty pgp_key means none)', async () => {
    const { publicKey } = await generateKey({ userIDs: [{ name: 'operator' }], format: 'object' });
    const started = await raw('update', 'generate-root/attempt', { pgp_key: Buffer.from(publicKey.write()).toString('base64') });
    expect(started).toMatchObject({ started: true, otp: '', pgp_fingerprint: publicKey.getFingerprint() });

    await sys.request('delete', 'generate-root/attempt');
    expect(await raw('update', 'generate-root/attempt', { pgp_key: '' })).toMatchObject({ started: true, otp: expect.stringMatching(new RegExp(`^.{${SERVICE_TOKEN_LENGTH}}$`)), pgp_fingerprint: '' });
  });

  it('cancels an attempt with no content in the answer', async () => {
    const { nonce } = (await raw('update', 'generate-root/attempt'))!;
    await raw('update', 'generate-root/update', { key: keys[0], nonce });
    expect(await sys.request('delete', 'generate-root/attempt')).toBeUndefined();
    expect(await raw('read', 'generate-root/attempt')).toEqual(notStartedGeneration);
    expect(await refusal(raw('update', 'generate-root/update', { key: keys[1], nonce }))).toEqual({ status: 400, message: 'no root generation is in progress' });
  });

  it('refuses a share without its key or nonce, with a wrong nonce, and a second attempt', async () => {
    const { nonce } = (await raw('update', 'generate-root/attempt'))!;
    expect(await refusal(raw('update', 'generate-root/update', { nonce }))).toEqual({ status: 400, message: 'missing required field "key"' });
    expect(await refusal(raw('update', 'generate-root/update', { key: keys[0] }))).toEqual({ status: 400, message: 'missing required field "nonce"' });
    expect(await refusal(raw('update', 'generate-root/update', { key: keys[0], nonce: 'another' }))).toEqual({
      status: 400,
      message: 'nonce does not match the current root generation (see its status for the nonce)',
    });
    expect(await refusal(raw('update', 'generate-root/attempt'))).toEqual({ status: 400, message: 'a root generation is already in progress; cancel it to start another' });
    expect(await raw('read', 'generate-root/attempt')).toMatchObject({ nonce, progress: 0 });
  });

  it('serves every operation without a token, in any namespace: the shares are the authorization', () => {
    const operations = [
      ['generate-root/attempt', 'read'],
      ['generate-root/attempt', 'update'],
      ['generate-root/attempt', 'delete'],
      ['generate-root/update', 'update'],
    ] as const;
    for (const [path, operation] of operations) {
      expect(sys.backend.operationInfo(path, operation)).toMatchObject({ unauthenticated: true, rootNamespace: false, sudo: false });
    }
  });
});
