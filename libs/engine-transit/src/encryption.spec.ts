import { createDecipheriv, randomBytes } from 'node:crypto';
import { MAX_BATCH_ITEMS } from './batch';
import { TransitMount, b64, failure, responseData, unb64 } from './testing/harness';

describe('transit encrypt, decrypt and rewrap', () => {
  let transit: TransitMount;

  beforeEach(() => {
    transit = TransitMount.create();
  });

  it.each(['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305', 'rsa-2048'])('round-trips data with %s keys', async (type) => {
    await transit.write('keys/k', { type });
    const { ciphertext, key_version } = await transit.write('encrypt/k', { plaintext: b64('attack at dawn') });
    expect(ciphertext).toMatch(/^svc:v1:[A-Za-z0-9+/]+=*$/);
    expect(key_version).toBe(1);
    const { plaintext } = await transit.write('decrypt/k', { ciphertext });
    expect(unb64(plaintext)).toBe('attack at dawn');
  });

  it('writes nonce ‖ ciphertext ‖ tag that standard AES-GCM decrypts with the exported key', async () => {
    await transit.write('keys/k', { exportable: true });
    const { ciphertext } = await transit.write('encrypt/k', { plaintext: b64('interoperable'), associated_data: b64('header') });
    const key = Buffer.from((await transit.read('export/encryption-key/k/1')).keys['1'], 'base64');
    const raw = Buffer.from(ciphertext.split(':')[2], 'base64');

    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    decipher.setAAD(Buffer.from('header'));
    const plaintext = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
    expect(plaintext.toString()).toBe('interoperable');
  });

  it('never repeats a random nonce, across several refills of the nonce pool', async () => {
    await transit.write('keys/k');
    const batch_input = Array.from({ length: 2_500 }, () => ({ plaintext: b64('same') }));
    const { batch_results } = await transit.write('encrypt/k', { batch_input });
    const nonces = new Set(batch_results.map((r: { ciphertext: string }) => Buffer.from(r.ciphertext.split(':')[2], 'base64').subarray(0, 12).toString('hex')));
    expect(nonces.size).toBe(2_500);
  });

  it('binds associated data: decrypting without it fails with 400', async () => {
    await transit.write('keys/k');
    const { ciphertext } = await transit.write('encrypt/k', { plaintext: b64('x'), associated_data: b64('aad') });
    expect(await failure(transit.write('decrypt/k', { ciphertext }))).toEqual({
      status: 400,
      message: 'cipher: message authentication failed',
    });
    expect(unb64((await transit.write('decrypt/k', { ciphertext, associated_data: b64('aad') })).plaintext)).toBe('x');
  });

  it('derives per-context keys: context is required and a wrong context does not decrypt', async () => {
    await transit.write('keys/d', { derived: true });
    expect((await failure(transit.write('encrypt/d', { plaintext: b64('x') }))).message).toMatch(/missing context/);
    const { ciphertext } = await transit.write('encrypt/d', { plaintext: b64('secret'), context: b64('tenant-1') });
    expect(unb64((await transit.write('decrypt/d', { ciphertext, context: b64('tenant-1') })).plaintext)).toBe('secret');
    const wrong = await failure(transit.write('decrypt/d', { ciphertext, context: b64('tenant-2') }));
    expect(wrong.status).toBe(400);
    expect(wrong.message).not.toContain('secret');
  });

  it('gives the same ciphertext for the same plaintext and context with convergent encryption', async () => {
    await transit.write('keys/c', { derived: true, convergent_encryption: true });
    const encryptOnce = async (plaintext: string, context: string) =>
      (await transit.write('encrypt/c', { plaintext: b64(plaintext), context: b64(context) })).ciphertext;
    const first = await encryptOnce('same', 'ctx');
    expect(await encryptOnce('same', 'ctx')).toBe(first);
    expect(await encryptOnce('other', 'ctx')).not.toBe(first);
    expect(await encryptOnce('same', 'ctx2')).not.toBe(first);
    const withNonce = { plaintext: b64('same'), context: b64('ctx'), nonce: b64('twelve bytes') };
    const nonced = (await transit.write('encrypt/c', withNonce)).ciphertext;
    expect((await transit.write('encrypt/c', withNonce)).ciphertext).toBe(nonced);
    expect(unb64((await transit.write('decrypt/c', { ciphertext: nonced, context: b64('ctx') })).plaintext)).toBe('same');
  });

  it('refuses nonces of the wrong length, and nonces for keys without convergent encryption', async () => {
    await transit.write('keys/c', { derived: true, convergent_encryption: true });
    await transit.write('keys/plain');
    const short = await failure(transit.write('encrypt/c', { plaintext: b64('x'), context: b64('c'), nonce: b64('short') }));
    expect(short).toEqual({ status: 400, message: 'nonce must be exactly 12 bytes' });
    const refused = await failure(transit.write('encrypt/plain', { plaintext: b64('x'), nonce: b64('twelve bytes') }));
    expect(refused.status).toBe(400);
  });

  it('refuses non-base64 plaintext, tampered ciphertext and unknown keys with 400, never echoing data', async () => {
    await transit.write('keys/k');
    const notBase64 = await failure(transit.write('encrypt/k', { plaintext: 'not base64 at all!' }));
    expect(notBase64).toEqual({ status: 400, message: 'plaintext is not valid base64' });

    const { ciphertext } = await transit.write('encrypt/k', { plaintext: b64('confidential') });
    const raw = Buffer.from(ciphertext.slice('svc:v1:'.length), 'base64');
    raw[raw.length - 20] ^= 1;
    const tampered = await failure(transit.write('decrypt/k', { ciphertext: `svc:v1:${raw.toString('base64')}` }));
    expect(tampered).toEqual({ status: 400, message: 'cipher: message authentication failed' });
    expect((await failure(transit.write('decrypt/k', { ciphertext: 'other:v1:abcd' }))).message).toBe('invalid ciphertext: no prefix');
    // Vault's prefix is read as this engine's (issue 20: ciphertext moves over from Vault).
    expect((await failure(transit.write('decrypt/k', { ciphertext: 'vault:v1:abcd' }))).message).toBe('invalid ciphertext: too short');
    expect((await failure(transit.write('decrypt/k', { ciphertext: 'svc:vX:abcd' }))).status).toBe(400);
    expect((await failure(transit.write('decrypt/k', { ciphertext: 'svc:v1:AAAA' }))).message).toBe('invalid ciphertext: too short');
    expect(await failure(transit.write('decrypt/missing', { ciphertext }))).toEqual({
      status: 400,
      message: 'encryption key not found: "missing"',
    });
  });

  it('refuses operations the key type does not support', async () => {
    await transit.write('keys/signer', { type: 'ed25519' });
    expect(await failure(transit.write('encrypt/signer', { plaintext: b64('x') }))).toEqual({
      status: 400,
      message: 'key type ed25519 does not support encryption',
    });
  });

  it('encrypts with a chosen version inside the min/max window and enforces min_decryption_version', async () => {
    await transit.write('keys/k');
    const v1 = (await transit.write('encrypt/k', { plaintext: b64('one') })).ciphertext;
    await transit.write('keys/k/rotate');
    const latest = await transit.write('encrypt/k', { plaintext: b64('two') });
    expect(latest.key_version).toBe(2);
    expect((await transit.write('encrypt/k', { plaintext: b64('x'), key_version: 1 })).ciphertext).toMatch(/^svc:v1:/);
    expect((await failure(transit.write('encrypt/k', { plaintext: b64('x'), key_version: 3 }))).status).toBe(400);

    await transit.write('keys/k/config', { min_decryption_version: 2, min_encryption_version: 2 });
    expect((await failure(transit.write('decrypt/k', { ciphertext: v1 }))).message).toMatch(/min_decryption_version/);
    expect((await failure(transit.write('encrypt/k', { plaintext: b64('x'), key_version: 1 }))).status).toBe(400);
    expect(unb64((await transit.write('decrypt/k', { ciphertext: latest.ciphertext })).plaintext)).toBe('two');
  });

  it('rewraps old ciphertext to the latest version without returning plaintext', async () => {
    await transit.write('keys/k');
    const old = (await transit.write('encrypt/k', { plaintext: b64('rewrap me') })).ciphertext;
    await transit.write('keys/k/rotate');
    const rewrapped = await transit.write('rewrap/k', { ciphertext: old });
    expect(rewrapped).toEqual({ ciphertext: expect.stringMatching(/^svc:v2:/), key_version: 2 });
    expect(unb64((await transit.write('decrypt/k', { ciphertext: rewrapped.ciphertext })).plaintext)).toBe('rewrap me');
  });

  describe('batches', () => {
    beforeEach(async () => {
      await transit.write('keys/k');
    });

    it('keeps input order and echoes references', async () => {
      const batch_input = ['a', 'b', 'c'].map((text) => ({ plaintext: b64(text), reference: `ref-${text}` }));
      const encrypted = (await transit.request('update', 'encrypt/k', { batch_input }))!;
      expect(encrypted.status).toBeUndefined();
      const results = responseData(encrypted).batch_results as { ciphertext: string; reference: string }[];
      expect(results.map((item) => item.reference)).toEqual(['ref-a', 'ref-b', 'ref-c']);

      const decrypted = await transit.write('decrypt/k', {
        batch_input: results.map(({ ciphertext, reference }) => ({ ciphertext, reference })),
      });
      expect(decrypted.batch_results.map((item: { plaintext: string }) => unb64(item.plaintext))).toEqual(['a', 'b', 'c']);
    });

    it('echoes references exactly, whatever characters they hold, through encrypt, rewrap and decrypt', async () => {
      const references = ['quote " and \\ backslash', 'line\nbreak\u0000\u001f', 'ünïcødé 秘密 🔑', '</script>', ''];
      const encrypted = await transit.write('encrypt/k', { batch_input: references.map((reference) => ({ plaintext: b64(reference), reference })) });
      expect(encrypted.batch_results.map((item: { reference: string }) => item.reference)).toEqual(references);
      const rewrapped = await transit.write('rewrap/k', { batch_input: encrypted.batch_results });
      expect(rewrapped.batch_results.map((item: { reference: string }) => item.reference)).toEqual(references);
      const decrypted = await transit.write('decrypt/k', { batch_input: rewrapped.batch_results });
      expect(decrypted.batch_results).toEqual(references.map((reference) => ({ plaintext: b64(reference), reference })));
    });

    it('reports item errors in place with the partial failure status, and an error status when all fail', async () => {
      const batch_input = [{ plaintext: b64('ok') }, { plaintext: '%%%', reference: 'bad' }, 'not an object'];
      const partial = (await transit.request('update', 'encrypt/k', { batch_input }))!;
      expect(partial.status).toBe(400);
      const results = responseData(partial).batch_results as Record<string, unknown>[];
      expect(results[0]).toEqual({ ciphertext: expect.stringMatching(/^svc:v1:/), key_version: 1, reference: '' });
      expect(results[1]).toEqual({ error: 'plaintext is not valid base64', reference: 'bad' });
      expect(results[2]).toEqual({ error: 'batch item is not an object', reference: '' });

      const custom = await transit.request('update', 'encrypt/k', { batch_input, partial_failure_response_code: 207 });
      expect(custom!.status).toBe(207);

      const allFail = await transit.request('update', 'decrypt/k', {
        batch_input: [{ ciphertext: 'svc:v1:AAAA' }, { ciphertext: 'garbage' }],
        partial_failure_response_code: 207,
      });
      expect(allFail!.status).toBe(400);
    });

    it(`refuses batches over ${MAX_BATCH_ITEMS} items`, async () => {
      const batch_input = Array.from({ length: MAX_BATCH_ITEMS + 1 }, () => ({ plaintext: '' }));
      expect((await failure(transit.write('encrypt/k', { batch_input }))).message).toMatch(/at most 10000/);
    });

    it('round-trips items of every size, small and larger than the reused seal buffer, in one batch', async () => {
      // 4,068 bytes seal to exactly 4,096 (nonce and tag add 28), the largest size assembled in place.
      const plaintexts = [0, 1, 4_068, 4_069, 100_000].map((size) => randomBytes(size));
      const { batch_results } = await transit.write('encrypt/k', { batch_input: plaintexts.map((p) => ({ plaintext: p.toString('base64') })) });
      const decrypted = await transit.write('decrypt/k', { batch_input: batch_results });
      expect(decrypted.batch_results.map((item: { plaintext: string }) => Buffer.from(item.plaintext, 'base64'))).toEqual(plaintexts);
    });

    it('processes a 1,000-item batch', async () => {
      const batch_input = Array.from({ length: 1000 }, (_, index) => ({ plaintext: b64(`item ${index}`) }));
      const { batch_results } = await transit.write('encrypt/k', { batch_input });
      const decrypted = await transit.write('decrypt/k', { batch_input: batch_results });
      expect(unb64(decrypted.batch_results[999].plaintext)).toBe('item 999');
    });
  });

  describe('upsert', () => {
    it('creates a missing key only with the create capability', async () => {
      const denied = await failure(transit.write('encrypt/new', { plaintext: b64('x') }, ['update']));
      expect(denied.status).toBe(403);
      const { ciphertext } = await transit.write('encrypt/new', { plaintext: b64('x'), type: 'chacha20-poly1305' }, ['create']);
      expect(ciphertext).toMatch(/^svc:v1:/);
      expect((await transit.read('keys/new')).type).toBe('chacha20-poly1305');
      // The key exists now, so update is enough.
      await transit.write('encrypt/new', { plaintext: b64('y') }, ['update']);
    });

    it('derives the upserted key when a context is given', async () => {
      await transit.write('encrypt/ctx', { plaintext: b64('x'), context: b64('c') }, ['create']);
      expect((await transit.read('keys/ctx')).derived).toBe(true);
    });

    it('never creates keys when upsert is disabled: create behaves as update', async () => {
      await transit.write('config/keys', { disable_upsert: true });
      expect(await transit.read('config/keys')).toEqual({ disable_upsert: true });
      expect(await failure(transit.write('encrypt/none', { plaintext: b64('x') }, ['update']))).toEqual({
        status: 400,
        message: 'encryption key not found: "none"',
      });
      // create alone no longer suffices: the request is an update of a missing key.
      expect((await failure(transit.write('encrypt/none', { plaintext: b64('x') }, ['create']))).status).toBe(403);
      expect(await transit.request('read', 'keys/none').catch((err: Error) => err.message)).toBe('encryption key not found: "none"');
    });
  });

  it('generates data keys, in plaintext or wrapped only', async () => {
    await transit.write('keys/k');
    const plain = await transit.write('datakey/plaintext/k', { bits: 512 });
    expect(Buffer.from(plain.plaintext, 'base64')).toHaveLength(64);
    expect((await transit.write('decrypt/k', { ciphertext: plain.ciphertext })).plaintext).toBe(plain.plaintext);
    const wrapped = await transit.write('datakey/wrapped/k');
    expect(wrapped.plaintext).toBeUndefined();
    expect(Buffer.from((await transit.write('decrypt/k', { ciphertext: wrapped.ciphertext })).plaintext, 'base64')).toHaveLength(32);
    expect((await failure(transit.write('datakey/other/k'))).status).toBe(400);
  });
});
