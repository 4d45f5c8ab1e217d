import { randomBytes } from 'node:crypto';
import { Pkcs11Relay, SOFTHSM_LIBRARY, SoftHsm, eventually, processAlive } from '@svc/testing';
import { SealUnavailableError } from './key-wrapper';
import { PKCS11_SEAL_CALL_TIMEOUT_MS, Pkcs11KeyWrapper, type Pkcs11SealConfig } from './pkcs11-seal';

const PIN = '4711-user';

describe('pkcs11 seal (SoftHSM2)', () => {
  const hsm = SoftHsm.create().use();
  const relay = Pkcs11Relay.build();
  const wrappers: Pkcs11KeyWrapper[] = [];
  const wrapper = (config: Partial<Pkcs11SealConfig>) => {
    const created = new Pkcs11KeyWrapper({ type: 'pkcs11', lib: SOFTHSM_LIBRARY, tokenLabel: 'unit', pin: PIN, keyLabel: 'root-wrap', generateKey: false, rsaOaepHash: 'sha256', ...config });
    wrappers.push(created);
    return created;
  };

  beforeAll(() => {
    hsm.initToken('unit', PIN);
    hsm.initToken('other', PIN);
  });

  afterAll(() => {
    wrappers.forEach((w) => w.close());
    relay.remove();
    hsm.remove();
  });

  it('generate_key creates an AES key on first wrap; another session (found by slot id) unwraps with it', async () => {
    const rootKey = randomBytes(32);
    const wrapped = await wrapper({ generateKey: true }).wrap(rootKey);
    expect(wrapped.includes(rootKey.toString('base64'))).toBe(false);
    expect(JSON.parse(wrapped.toString('utf8'))).toMatchObject({ mechanism: 'CKM_AES_GCM', key_label: 'root-wrap' });
    const bySlot = wrapper({ tokenLabel: undefined, slot: hsm.slotOf('unit') });
    expect((await bySlot.unwrap(wrapped)).equals(rootKey)).toBe(true);
  });

  it('a missing key without generate_key is a clear error', async () => {
    const missing = wrapper({ keyLabel: 'absent' });
    await expect(missing.wrap(randomBytes(32))).rejects.toThrow(new SealUnavailableError('pkcs11 seal: no key labelled "absent" on the token labelled "unit"; create it on the token or set generate_key = "true"'));
  });

  it('a wrong PIN is refused without showing it, and is not tried again', async () => {
    // A token no wrapper here has logged in to yet.
    const wrong = wrapper({ tokenLabel: 'other', pin: 'not-the-pin' });
    const first = await wrong.unwrap(Buffer.from('{"mechanism":"CKM_AES_GCM","key_label":"root-wrap","iv":"","ciphertext":""}')).catch((err: Error) => err);
    expect(first).toBeInstanceOf(SealUnavailableError);
    expect((first as Error).message).toMatch(/the token labelled "other" refused the PIN \(CKR_PIN_INCORRECT\)/);
    expect((first as Error).message).not.toContain('not-the-pin');
    const second = await wrong.wrap(randomBytes(32)).catch((err: Error) => err);
    expect(second).toBe(first);
  });

  it('opens a new session when the library reports its session closed', async () => {
    const reused = wrapper({ lib: relay.lib, generateKey: true });
    const rootKey = randomBytes(32);
    const wrapped = await reused.wrap(rootKey);
    relay.closeSessions();
    expect((await reused.unwrap(wrapped)).equals(rootKey)).toBe(true);
  });

  it('a library that stops answering fails the call at the deadline, holds up nothing else, and the next call starts it afresh', async () => {
    const hanging = wrapper({ lib: relay.lib, generateKey: true });
    const rootKey = randomBytes(32);
    const wrapped = await hanging.wrap(rootKey);
    relay.silence();
    let longestTimerGap = 0;
    let lastTick = Date.now();
    const ticker = setInterval(() => {
      longestTimerGap = Math.max(longestTimerGap, Date.now() - lastTick);
      lastTick = Date.now();
    }, 50);
    const started = Date.now();
    const failure = await hanging.unwrap(wrapped).catch((err: Error) => err);
    const waited = Date.now() - started;
    clearInterval(ticker);
    expect(failure).toBeInstanceOf(SealUnavailableError);
    expect((failure as Error).message).toBe(
      `pkcs11 seal: could not decrypt the root key on the token labelled "unit": the PKCS#11 library ${relay.lib} did not answer C_FindObjectsInit within 10 s; its process was stopped, and the next call starts another`,
    );
    expect(waited).toBeGreaterThanOrEqual(PKCS11_SEAL_CALL_TIMEOUT_MS);
    expect(waited).toBeLessThan(PKCS11_SEAL_CALL_TIMEOUT_MS + 2_000);
    expect(longestTimerGap).toBeLessThan(500);
    // The process held in the library was killed, not left waiting.
    const stalled = relay.stalledProcesses();
    expect(stalled).toHaveLength(1);
    await eventually(async () => !processAlive(stalled[0]), 5_000);
    relay.heal();
    expect((await hanging.unwrap(wrapped)).equals(rootKey)).toBe(true);
  });

  it('CKM_RSA_PKCS_OAEP with a generated RSA pair; a key on another token does not decrypt it', async () => {
    // SoftHSM 2.6 implements OAEP with SHA-1 only.
    const rsa = wrapper({ keyLabel: 'rsa-wrap', mechanism: 'CKM_RSA_PKCS_OAEP', generateKey: true, rsaOaepHash: 'sha1' });
    const rootKey = randomBytes(32);
    const wrapped = await rsa.wrap(rootKey);
    expect(JSON.parse(wrapped.toString('utf8'))).toMatchObject({ mechanism: 'CKM_RSA_PKCS_OAEP', key_label: 'rsa-wrap', hash: 'sha1' });
    expect((await wrapper({ keyLabel: 'rsa-wrap' }).unwrap(wrapped)).equals(rootKey)).toBe(true);
    await expect(wrapper({ tokenLabel: 'other' }).unwrap(wrapped)).rejects.toThrow(/the key that encrypted the root key \(labelled "rsa-wrap" with id [0-9a-f]+\) is not on the token labelled "other"/);
  });

  it('names a token that is not there', async () => {
    await expect(wrapper({ tokenLabel: 'nowhere' }).wrap(randomBytes(32))).rejects.toThrow(/the token labelled "nowhere" is not present/);
  });
});
