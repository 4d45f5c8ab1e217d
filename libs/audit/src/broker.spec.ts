import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { AuditBroker, FileAuditDevice } from './index';
import { SECRETS, makeTempDir, readLines, sampleAuth, sampleRequest, sampleResponse } from './testing/fixtures';

const FIXED_TIME = new Date('2024-03-04T05:06:07.089Z');
let temp: ReturnType<typeof makeTempDir>;
let broker: AuditBroker;
let deviceErrors: { path: string; error: unknown }[];

beforeEach(() => {
  temp = makeTempDir();
  deviceErrors = [];
  broker = new AuditBroker({
    now: () => FIXED_TIME,
    onDeviceError: (path, error) => deviceErrors.push({ path, error }),
  });
});

afterEach(async () => {
  await broker.close();
  temp.remove();
});

function fileDevice(path: string, options: Record<string, string> = {}): FileAuditDevice {
  return new FileAuditDevice(path, { file_path: join(temp.dir, `${path}.log`), ...options }, randomBytes(32));
}

/** Always fails to write: /dev/full answers every write with ENOSPC. */
function fullDiskDevice(path: string): FileAuditDevice {
  return new FileAuditDevice(path, { file_path: '/dev/full', mode: '0000' }, randomBytes(32));
}

function linesOf(path: string) {
  return readLines(join(temp.dir, `${path}.log`)).map((line) => JSON.parse(line));
}

async function captureError(promise: Promise<unknown>): Promise<ServiceError> {
  const outcome = await promise.then(
    () => new Error('expected a rejection'),
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(ServiceError);
  return outcome as ServiceError;
}

describe('AuditBroker', () => {
  it('does nothing, successfully, with no devices', async () => {
    expect(broker.hasDevices).toBe(false);

    await expect(broker.logRequest({ request: sampleRequest() })).resolves.toBeUndefined();
  });

  it('writes the request and the response to every device, each hashed with its own salt', async () => {
    const first = fileDevice('first');
    const second = fileDevice('second');
    broker.register(first);
    broker.register(second);

    await broker.logRequest({ auth: sampleAuth(), request: sampleRequest() });
    await broker.logResponse({ auth: sampleAuth(), request: sampleRequest(), response: sampleResponse() });

    for (const device of [first, second]) {
      const [request, response] = linesOf(device.path);
      expect(request).toEqual({
        time: FIXED_TIME.toISOString(),
        type: 'request',
        auth: expect.objectContaining({ client_token: device.hash(SECRETS.clientToken) }),
        request: expect.objectContaining({ id: 'req-1' }),
      });
      expect(response).toMatchObject({
        time: FIXED_TIME.toISOString(),
        type: 'response',
        request: { id: 'req-1' },
        response: { status: 200, data: { password: device.hash(SECRETS.password) } },
      });
      expect(response).not.toHaveProperty('error');
    }
    expect(linesOf('first')[0].auth.client_token).not.toBe(linesOf('second')[0].auth.client_token);
  });

  it('records the error messages, joined, when the operation failed', async () => {
    broker.register(fileDevice('file'));

    await broker.logResponse({
      request: sampleRequest(),
      errors: ['permission denied', 'invalid token'],
    });

    const [line] = linesOf('file');
    expect(line).toMatchObject({ type: 'response', error: 'permission denied; invalid token' });
    expect(line).not.toHaveProperty('response');
  });

  it('passes the mount’s non-HMAC keys to the devices', async () => {
    broker.register(fileDevice('file'));

    await broker.logResponse({
      request: sampleRequest(),
      response: sampleResponse(),
      nonHmacRequestKeys: ['password'],
      nonHmacResponseKeys: ['password'],
    });

    const [line] = linesOf('file');
    expect(line.request.data.password).toBe(SECRETS.password);
    expect(line.response.data.password).toBe(SECRETS.password);
  });

  it('throws a 500 when its only device cannot write, reporting the device but not the entry', async () => {
    broker.register(fullDiskDevice('full'));

    const error = await captureError(broker.logRequest({ auth: sampleAuth(), request: sampleRequest() }));

    expect(error.kind).toBe('internal');
    expect(error.errors).toEqual(['audit: no audit device could log the request']);
    expect(deviceErrors).toHaveLength(1);
    expect(deviceErrors[0].path).toBe('full');
    expect(String(deviceErrors[0].error)).toContain('ENOSPC');
    expect(String(deviceErrors[0].error)).not.toContain(SECRETS.clientToken);
    const responseError = await captureError(broker.logResponse({ request: sampleRequest() }));
    expect(responseError.errors).toEqual(['audit: no audit device could log the response']);
  });

  it('reopens every device after a rotation, reporting one that cannot reopen and returning the others', async () => {
    broker.register(fileDevice('rotated'));
    const nested = new FileAuditDevice('nested', { file_path: join(temp.dir, 'nested', 'audit.log') }, randomBytes(32));
    broker.register(nested);
    await broker.logRequest({ request: sampleRequest() });
    renameSync(join(temp.dir, 'rotated.log'), join(temp.dir, 'rotated.log.1'));
    // A file where the device's directory was: it cannot be opened again.
    rmSync(join(temp.dir, 'nested'), { recursive: true });
    writeFileSync(join(temp.dir, 'nested'), '');

    expect(await broker.reopen()).toEqual(['rotated']);
    expect(deviceErrors.map((failure) => failure.path)).toEqual(['nested']);
    expect(String(deviceErrors[0].error)).toContain('ENOTDIR');

    await broker.logResponse({ request: sampleRequest(), response: sampleResponse() });
    expect(linesOf('rotated').map((line) => line.type)).toEqual(['response']);
    expect(readLines(join(temp.dir, 'rotated.log.1')).map((line) => JSON.parse(line).type)).toEqual(['request']);
  });

  it('succeeds when another device logged the entry, still reporting the failed one', async () => {
    broker.register(fullDiskDevice('full'));
    broker.register(fileDevice('healthy'));

    await broker.logRequest({ request: sampleRequest() });

    expect(linesOf('healthy')).toHaveLength(1);
    expect(deviceErrors.map(({ path }) => path)).toEqual(['full']);
  });

  it('registers, lists and deregisters devices by path, ignoring surrounding slashes', async () => {
    const device = fileDevice('team');
    broker.register(device);

    expect(broker.hasDevices).toBe(true);
    expect(broker.list()).toEqual([device]);
    expect(broker.get('team/')).toBe(device);
    expect(() => broker.register(fileDevice('team'))).toThrow('path "team/" is already in use');

    await expect(broker.deregister('/team/')).resolves.toBe(true);
    await expect(broker.deregister('team')).resolves.toBe(false);
    expect(broker.hasDevices).toBe(false);
    await expect(device.log({ time: '', type: 'request', request: sampleRequest() })).rejects.toThrow('is closed');
  });

  it('refuses a device with an empty path', () => {
    expect(() => broker.register(new FileAuditDevice('/', { file_path: 'discard' }, randomBytes(32)))).toThrow(
      'audit device path must not be empty',
    );
  });

  it('hashes for sys/audit-hash with the named device’s salt', async () => {
    const device = fileDevice('file');
    broker.register(device);
    await broker.logRequest({ request: sampleRequest() });

    const hash = broker.hash('file/', SECRETS.password);

    expect(hash).toBe(device.hash(SECRETS.password));
    expect(linesOf('file')[0].request.data.password).toBe(hash);
  });

  it('answers 400 to sys/audit-hash for an unknown device or an empty input', () => {
    broker.register(fileDevice('file'));

    expect(() => broker.hash('nope', 'x')).toThrow(ServiceError.badRequest('unknown audit device "nope"'));
    expect(() => broker.hash('file', '')).toThrow('the "input" parameter is empty');
  });
});
