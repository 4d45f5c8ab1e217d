import { chmodSync, existsSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ServiceError, type ErrorKind } from '@svc/api-contract';
import { createAuditDevice, FileAuditDevice, type AuditLine } from './index';
import { SECRETS, makeTempDir, readLines, sampleRequest, sampleResponseLine } from './testing/fixtures';

const salt = randomBytes(32);
let temp: ReturnType<typeof makeTempDir>;
let devices: FileAuditDevice[];

beforeEach(() => {
  temp = makeTempDir();
  devices = [];
});

afterEach(async () => {
  await Promise.all(devices.map((device) => device.close()));
  temp.remove();
});

function openDevice(options: Record<string, string>): FileAuditDevice {
  const device = new FileAuditDevice('file', options, salt);
  devices.push(device);
  return device;
}

function auditFile(name = 'audit.log'): string {
  return join(temp.dir, name);
}

function requestLine(id: string): AuditLine {
  return { time: new Date().toISOString(), type: 'request', request: sampleRequest({ id }) };
}

function expectServiceError(build: () => unknown, kind: ErrorKind, message: string | RegExp): void {
  let thrown: unknown;
  try {
    build();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ServiceError);
  expect((thrown as ServiceError).kind).toBe(kind);
  expect((thrown as ServiceError).errors.join('\n')).toMatch(message);
}

describe('FileAuditDevice', () => {
  it('creates the file and appends one parseable JSON document per line', async () => {
    const device = openDevice({ file_path: auditFile() });
    const response = sampleResponseLine();

    await device.log(requestLine('req-1'));
    await device.log(response);

    const lines = readLines(auditFile());
    expect(lines).toHaveLength(2);
    const [first, second] = lines.map((line) => JSON.parse(line));
    expect(first).toMatchObject({ type: 'request', request: { id: 'req-1', path: 'secret/data/app' } });
    expect(second).toMatchObject({ time: response.time, type: 'response', response: { status: 200 } });
  });

  it('appends to an existing file instead of replacing it', async () => {
    writeFileSync(auditFile(), '{"earlier":true}\n');
    const device = openDevice({ file_path: auditFile() });

    await device.log(requestLine('req-2'));

    const lines = readLines(auditFile());
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0])).toEqual({ earlier: true });
  });

  it('never writes secrets in clear, and hash() reproduces the HMACs found in the file', async () => {
    const device = openDevice({ file_path: auditFile() });

    await device.log(sampleResponseLine());

    const [text] = readLines(auditFile());
    for (const secret of Object.values(SECRETS)) {
      expect(text).not.toContain(secret);
      expect(text).toContain(device.hash(secret));
    }
    const written = JSON.parse(text);
    expect(written.request.data.password).toBe(device.hash(SECRETS.password));
    expect(written.auth.client_token).toBe(device.hash(SECRETS.clientToken));
  });

  it('hashes with its own salt, so two devices write different HMACs', () => {
    const first = openDevice({ file_path: 'discard' });
    const second = new FileAuditDevice('other', { file_path: 'discard' }, randomBytes(32));

    expect(first.hash(SECRETS.password)).not.toBe(second.hash(SECRETS.password));
  });

  it('writes everything in clear with log_raw=true', async () => {
    const device = openDevice({ file_path: auditFile(), log_raw: 'true' });

    await device.log(sampleResponseLine());

    const [text] = readLines(auditFile());
    expect(JSON.parse(text)).toEqual(sampleResponseLine());
  });

  it('keeps accessors in clear with hmac_accessor=false', async () => {
    const device = openDevice({ file_path: auditFile(), hmac_accessor: 'false' });

    await device.log(sampleResponseLine());

    const written = JSON.parse(readLines(auditFile())[0]);
    expect(written.auth.accessor).toBe(SECRETS.accessor);
    expect(written.request.client_token_accessor).toBe(SECRETS.accessor);
    expect(written.auth.client_token).toBe(device.hash(SECRETS.clientToken));
  });

  it('leaves the mount’s non-HMAC data keys in clear', async () => {
    const device = openDevice({ file_path: auditFile() });

    await device.log(sampleResponseLine(), { nonHmacRequestKeys: ['password'], nonHmacResponseKeys: ['version'] });

    const written = JSON.parse(readLines(auditFile())[0]);
    expect(written.request.data.password).toBe(SECRETS.password);
    expect(written.response.data).toEqual({ password: device.hash(SECRETS.password), version: 3 });
  });

  it('writes the prefix before each JSON document', async () => {
    const device = openDevice({ file_path: auditFile(), prefix: 'svc-audit: ' });

    await device.log(requestLine('a'));
    await device.log(requestLine('b'));

    const lines = readLines(auditFile());
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.startsWith('svc-audit: {')).toBe(true);
      expect(() => JSON.parse(line.slice('svc-audit: '.length))).not.toThrow();
    }
  });

  it('creates the file with mode 0600 by default', () => {
    openDevice({ file_path: auditFile() });

    expect(statSync(auditFile()).mode & 0o777).toBe(0o600);
  });

  it('sets the requested mode, also on an existing file', () => {
    writeFileSync(auditFile(), '');
    chmodSync(auditFile(), 0o600);

    openDevice({ file_path: auditFile(), mode: '0640' });

    expect(statSync(auditFile()).mode & 0o777).toBe(0o640);
  });

  it('leaves an existing file’s mode alone with mode 0000', () => {
    writeFileSync(auditFile(), '');
    chmodSync(auditFile(), 0o644);

    openDevice({ file_path: auditFile(), mode: '0000' });

    expect(statSync(auditFile()).mode & 0o777).toBe(0o644);
  });

  it('writes nothing with file_path=discard, yet still hashes', async () => {
    const device = openDevice({ file_path: 'discard' });

    await expect(device.log(sampleResponseLine())).resolves.toBeUndefined();

    expect(existsSync('discard')).toBe(false);
    expect(device.hash('x')).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it('writes lines to the process’s stdout with file_path=stdout', async () => {
    const written: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(((chunk: string, done: () => void) => {
      written.push(chunk);
      done();
      return true;
    }) as typeof process.stdout.write);
    try {
      const device = openDevice({ file_path: 'stdout' });
      await device.log(requestLine('to-stdout'));
    } finally {
      write.mockRestore();
    }

    expect(written).toHaveLength(1);
    expect(written[0].endsWith('\n')).toBe(true);
    expect(JSON.parse(written[0])).toMatchObject({ request: { id: 'to-stdout' } });
  });

  it('keeps 200 concurrent entries intact, one per line, even with two devices on one file', async () => {
    const first = openDevice({ file_path: auditFile() });
    const second = new FileAuditDevice('second', { file_path: auditFile() }, salt);
    devices.push(second);
    // Large lines make an interleaved write visible as broken JSON.
    const bulk = 'x'.repeat(64 * 1024);
    const ids = Array.from({ length: 200 }, (_, index) => `req-${index}`);

    await Promise.all(
      ids.map((id, index) => {
        const line = requestLine(id);
        line.request.data = { bulk };
        return (index % 2 === 0 ? first : second).log(line);
      }),
    );

    const lines = readLines(auditFile());
    expect(lines).toHaveLength(200);
    const written = lines.map((line) => JSON.parse(line));
    expect(written.map((entry) => entry.request.id).sort()).toEqual([...ids].sort());
    expect(written.every((entry) => entry.request.data.bulk === first.hash(bulk))).toBe(true);
  });

  it('writes to a fresh file after reopen(), for log rotation', async () => {
    const device = openDevice({ file_path: auditFile() });
    await device.log(requestLine('before'));
    renameSync(auditFile(), auditFile('audit.log.1'));

    await device.reopen();
    await device.log(requestLine('after'));

    expect(readLines(auditFile('audit.log.1')).map((line) => JSON.parse(line).request.id)).toEqual(['before']);
    expect(readLines(auditFile()).map((line) => JSON.parse(line).request.id)).toEqual(['after']);
  });

  it('refuses to log once closed', async () => {
    const device = openDevice({ file_path: auditFile() });
    await device.close();

    await expect(device.log(requestLine('late'))).rejects.toThrow('is closed');
  });

  it('fails to build, naming file_path and the reason, when the file cannot be opened', () => {
    writeFileSync(auditFile('plain-file'), '');
    const underAFile = join(auditFile('plain-file'), 'audit.log');

    expectServiceError(() => openDevice({ file_path: underAFile }), 'bad-request', /file_path.*not a directory/);
  });

  it('reports a failing write (disk full) when logging', async () => {
    // /dev/full accepts an open and fails every write with ENOSPC; mode 0000 leaves it untouched.
    const device = openDevice({ file_path: '/dev/full', mode: '0000' });

    await expect(device.log(requestLine('lost'))).rejects.toThrow('ENOSPC');
  });

  it.each([
    [{}, /"file_path" is required/],
    [{ file_path: '' }, /"file_path" is required/],
    [{ file_path: 'discard', format: 'jsonx' }, /"format": "jsonx" is not supported/],
    [{ file_path: 'discard', format: 'xml' }, /"format" must be "json"/],
    [{ file_path: 'discard', log_raw: 'yes' }, /"log_raw" must be a boolean/],
    [{ file_path: 'discard', hmac_accessor: 'maybe' }, /"hmac_accessor" must be a boolean/],
    [{ file_path: 'discard', elide_list_responses: 'on' }, /"elide_list_responses" must be a boolean/],
    [{ file_path: 'discard', mode: 'rw' }, /"mode" must be an octal file mode/],
    [{ file_path: 'discard', mode: '0755' }, /"mode" must not grant execute permission/],
    [{ file_path: 'discard', mode: '4600' }, /"mode" may only hold permission bits/],
    [{ file_path: 'discard', filepath: '/tmp/x' }, /unknown audit device option\(s\): "filepath"/],
  ])('rejects options %j with a 400 naming the option', (options, message) => {
    expectServiceError(() => new FileAuditDevice('file', options, salt), 'bad-request', message);
  });

  it('accepts Go-style boolean spellings', async () => {
    const device = openDevice({ file_path: auditFile(), log_raw: 'T' });

    await device.log(requestLine('raw'));

    expect(readLines(auditFile())[0]).toContain(SECRETS.password);
  });

  it('describes itself as sys/audit lists it', () => {
    const device = createAuditDevice('file', 'team-a/', { file_path: 'discard' }, salt, {
      description: 'team A log',
      local: true,
    });

    expect(device).toMatchObject({
      path: 'team-a/',
      type: 'file',
      description: 'team A log',
      local: true,
      options: { file_path: 'discard' },
    });
  });

  it('refuses an unknown device type', () => {
    expectServiceError(() => createAuditDevice('syslog', 'syslog', {}, salt), 'bad-request', /unknown audit device type "syslog"/);
  });
});
