import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { AUTH_PREFIX_BYTES, MAX_CLOCK_SKEW_MS, MessageAuthenticator, readClusterKey, RejectionLog, ReplayGuard } from './message-auth';

const text = (value: string) => new TextEncoder().encode(value);
const str = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('bus message authentication', () => {
  const clusterKey = randomBytes(32);
  const sender = new MessageAuthenticator(clusterKey);
  const receiver = new MessageAuthenticator(clusterKey);
  const subject = 'svc.transit.request';
  const inbox = '_INBOX.abc.1';

  afterEach(() => jest.restoreAllMocks());

  it('passes a message signed with the same cluster key, payload intact', () => {
    const framed = sender.sign(subject, inbox, undefined, text('{"op":"encrypt"}'));

    const verified = receiver.verify(subject, inbox, {}, framed, new ReplayGuard());

    expect(verified).toBeInstanceOf(Uint8Array);
    expect(str(verified as Uint8Array)).toBe('{"op":"encrypt"}');
    expect(framed.length).toBe(AUTH_PREFIX_BYTES + '{"op":"encrypt"}'.length);
  });

  it('passes headers that travel with the message, in any order', () => {
    const framed = sender.sign(subject, undefined, { b: '2', a: '1' }, text('x'));

    expect(receiver.verify(subject, undefined, { a: '1', b: '2' }, framed, new ReplayGuard())).toBeInstanceOf(Uint8Array);
  });

  it('refuses a message signed with another cluster key', () => {
    const outsider = new MessageAuthenticator(randomBytes(32));

    const framed = outsider.sign(subject, inbox, undefined, text('{}'));

    expect(receiver.verify(subject, inbox, {}, framed, new ReplayGuard())).toBe('bad signature');
  });

  it.each([
    ['subject', (framed: Uint8Array) => receiver.verify('svc.database.request', inbox, {}, framed, new ReplayGuard())],
    ['reply subject', (framed: Uint8Array) => receiver.verify(subject, '_INBOX.attacker.1', {}, framed, new ReplayGuard())],
    ['missing reply subject', (framed: Uint8Array) => receiver.verify(subject, undefined, {}, framed, new ReplayGuard())],
    ['headers', (framed: Uint8Array) => receiver.verify(subject, inbox, { 'svc-error': '1' }, framed, new ReplayGuard())],
    [
      'payload',
      (framed: Uint8Array) => {
        const altered = Uint8Array.from(framed);
        altered[altered.length - 1] ^= 1;
        return receiver.verify(subject, inbox, {}, altered, new ReplayGuard());
      },
    ],
    [
      'timestamp',
      (framed: Uint8Array) => {
        const altered = Uint8Array.from(framed);
        altered[6] ^= 1;
        return receiver.verify(subject, inbox, {}, altered, new ReplayGuard());
      },
    ],
  ])('refuses a message whose %s was changed', (_what, verifyChanged) => {
    expect(verifyChanged(sender.sign(subject, inbox, undefined, text('{"plaintext":"aGk="}')))).toBe('bad signature');
  });

  it('refuses a message without the authentication prefix', () => {
    const replays = new ReplayGuard();

    expect(receiver.verify(subject, inbox, {}, text('{"publicKey":"MCowBQYDK2VuAyEA"}'), replays)).toBe('unauthenticated');
    expect(receiver.verify(subject, inbox, {}, new Uint8Array(0), replays)).toBe('unauthenticated');
    expect(receiver.verify(subject, inbox, {}, new Uint8Array(AUTH_PREFIX_BYTES + 4), replays)).toBe('unauthenticated');
  });

  it('refuses a message whose timestamp is outside the clock-skew window, either way', () => {
    const now = Date.now();
    const signedAt = (time: number) => {
      jest.spyOn(Date, 'now').mockReturnValueOnce(time);
      return sender.sign(subject, undefined, undefined, text('seal'));
    };

    expect(receiver.verify(subject, undefined, {}, signedAt(now - MAX_CLOCK_SKEW_MS - 1_000), new ReplayGuard())).toBe('stale timestamp');
    expect(receiver.verify(subject, undefined, {}, signedAt(now + MAX_CLOCK_SKEW_MS + 1_000), new ReplayGuard())).toBe('stale timestamp');
    expect(receiver.verify(subject, undefined, {}, signedAt(now - MAX_CLOCK_SKEW_MS / 2), new ReplayGuard())).toBeInstanceOf(Uint8Array);
  });

  it('refuses a replayed broadcast, and an older message of the same sender', () => {
    const replays = new ReplayGuard();
    const first = sender.sign('svc.keyring.seal', undefined, undefined, new Uint8Array(0));
    const second = sender.sign('svc.keyring.seal', undefined, undefined, new Uint8Array(0));

    expect(receiver.verify('svc.keyring.seal', undefined, {}, first, replays)).toBeInstanceOf(Uint8Array);
    expect(receiver.verify('svc.keyring.seal', undefined, {}, first, replays)).toBe('replayed');
    expect(receiver.verify('svc.keyring.seal', undefined, {}, second, replays)).toBeInstanceOf(Uint8Array);
    expect(receiver.verify('svc.keyring.seal', undefined, {}, first, replays)).toBe('replayed');
  });

  it('keeps senders apart: each has its own sequence', () => {
    const replays = new ReplayGuard();
    const other = new MessageAuthenticator(clusterKey);
    for (let i = 0; i < 3; i++) sender.sign(subject, undefined, undefined, text('advance the sequence'));

    expect(receiver.verify(subject, undefined, {}, sender.sign(subject, undefined, undefined, text('a')), replays)).toBeInstanceOf(Uint8Array);
    expect(receiver.verify(subject, undefined, {}, other.sign(subject, undefined, undefined, text('b')), replays)).toBeInstanceOf(Uint8Array);
  });

  it('refuses a cluster key shorter than 32 bytes', () => {
    expect(() => new MessageAuthenticator(randomBytes(31))).toThrow('at least 32 bytes');
  });
});

describe('the cluster key file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cluster-key-'));
  const keyFile = (name: string, contents: string | Buffer, mode = 0o600) => {
    const file = path.join(dir, name);
    writeFileSync(file, contents, { mode });
    return file;
  };
  const warnings = () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    return { lines, warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) };
  };

  it('is required, and the error says how to make one', () => {
    expect(() => readClusterKey(undefined)).toThrow(/cluster_key_file is required.*openssl rand -base64 32 > cluster\.key/);
  });

  it('reads base64 text as openssl writes it, newline included', () => {
    const material = randomBytes(32);

    expect(readClusterKey(keyFile('base64.key', `${material.toString('base64')}\n`))).toEqual(material);
  });

  it('reads raw bytes', () => {
    const material = randomBytes(48);

    expect(readClusterKey(keyFile('raw.key', material))).toEqual(material);
  });

  it('refuses less than 32 bytes of key material, saying how many it found', () => {
    const file = keyFile('short.key', randomBytes(16).toString('base64'));

    expect(() => readClusterKey(file)).toThrow(`cluster_key_file ${file} holds 16 bytes of key material, at least 32 are needed`);
  });

  it('names a file it cannot read, without its contents', () => {
    expect(() => readClusterKey(path.join(dir, 'absent.key'))).toThrow(`cannot read cluster_key_file ${path.join(dir, 'absent.key')}: ENOENT`);
  });

  it('warns when group or others may read the file, never logging the key', () => {
    const material = randomBytes(32).toString('base64');
    const log = warnings();

    readClusterKey(keyFile('open.key', material, 0o644), log);
    readClusterKey(keyFile('closed.key', material, 0o600), log);

    expect(log.lines).toEqual([{ fields: { file: path.join(dir, 'open.key') }, message: expect.stringContaining('chmod 600') }]);
    expect(JSON.stringify(log.lines)).not.toContain(material);
  });
});

describe('the log of refused messages', () => {
  it('names subject and reason, and stops after ten lines a minute, then counts what it left out', () => {
    const lines: Record<string, unknown>[] = [];
    const log = new RejectionLog({ warn: (fields) => lines.push(fields) });
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);

    for (let i = 0; i < 15; i++) log.note('svc.keyring.request', 'unauthenticated');
    clock.mockReturnValue(now + 61_000);
    log.note('svc.keyring.seal', 'replayed');

    expect(lines).toHaveLength(11);
    expect(lines[0]).toEqual({ subject: 'svc.keyring.request', reason: 'unauthenticated' });
    expect(lines[10]).toEqual({ subject: 'svc.keyring.seal', reason: 'replayed', suppressed: 5 });
    clock.mockRestore();
  });
});
