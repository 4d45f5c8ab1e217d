/**
 * What an operator reads in a process's log: configuration warnings at start, the line each
 * request an engine service serves leaves (with the gateway's request id, never the data), start and
 * stop lines, and SIGHUP reopening the audit files and re-reading the log level.
 */
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, eventually, initAndUnseal, startServerProcess, startTopology, type ServerProcess, type Topology } from '@svc/testing';

type LogLine = Record<string, unknown> & { level: number; msg: string; service: string };

const WARN = 40;
const DEBUG = 20;

function entries(server: ServerProcess): LogLine[] {
  return server.logs.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as LogLine);
}

/** The first line of the process's log that matches, waiting for it up to a deadline. */
async function logLine(server: ServerProcess, matches: (line: LogLine) => boolean): Promise<LogLine> {
  let found: LogLine | undefined;
  await eventually(async () => {
    found = entries(server).find(matches);
    return found !== undefined;
  }, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; the log of ${server.name} ends with:\n${server.logs.slice(-20).join('\n')}`);
  });
  return found!;
}

describe('logs, all-in-one', () => {
  let dir: string;
  let configFile: string;
  let auditFile: string;
  let server: ServerProcess;
  let url: string;
  let rootToken: string;

  const configWith = (logLevel: string) =>
    `listener "tcp" {\n  address = "127.0.0.1:0"\n  adress = "127.0.0.1:8300"\n  tls_disable = true\n}\n` +
    `storage "embedded" {\n  path = "${path.join(dir, 'data')}"\n}\nlog_level = "${logLevel}"\n`;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-logs-'));
    configFile = path.join(dir, 'server.hcl');
    auditFile = path.join(dir, 'audit.log');
    writeFileSync(configFile, configWith('info'));
    server = await startServerProcess('all-in-one', [`-config=${configFile}`], 60_000);
    url = `http://${server.addresses[0]}`;
    ({ rootToken } = await initAndUnseal(url));
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an unknown field is logged at start as a warning naming the file, the stanza and the field', async () => {
    const warning = await logLine(server, (line) => line.level === WARN && line.msg.includes('adress'));
    expect(warning).toMatchObject({ service: 'gateway', msg: `${configFile}: listener "tcp" [0]: unknown field "adress" ignored` });
    // Logged before the process said it started.
    const messages = entries(server).map((line) => line.msg);
    expect(messages.indexOf(warning.msg)).toBeLessThan(messages.indexOf('gateway started'));
  });

  test('SIGHUP reopens the audit file: after a rotation new entries go to a new file', async () => {
    const enable = await api(url, 'PUT', '/v1/sys/audit/file', { token: rootToken, body: { type: 'file', options: { file_path: auditFile } } });
    expect(enable.status).toBe(204);
    expect((await api(url, 'GET', '/v1/sys/mounts', { token: rootToken })).status).toBe(200);
    renameSync(auditFile, `${auditFile}.1`);

    server.child.kill('SIGHUP');
    const reloaded = await logLine(server, (line) => line.msg === 'reloaded on SIGHUP');
    expect(reloaded).toMatchObject({ service: 'gateway', log_level: 'info', audit_devices_reopened: ['file/'] });

    const read = await api(url, 'GET', '/v1/sys/policies/acl/default', { token: rootToken });
    expect(read.status).toBe(200);
    await eventually(async () => existsSync(auditFile) && readFileSync(auditFile, 'utf8').includes('sys/policies/acl/default'));
    expect(readFileSync(`${auditFile}.1`, 'utf8')).not.toContain('sys/policies/acl/default');
    expect(readFileSync(`${auditFile}.1`, 'utf8')).toContain('sys/mounts');
  });

  test('SIGHUP re-reads log_level: at debug, the requests engines serve are logged', async () => {
    const before = await api(url, 'GET', '/v1/sys/policies/acl/default', { token: rootToken });
    writeFileSync(configFile, configWith('debug'));
    server.child.kill('SIGHUP');
    await logLine(server, (line) => line.msg === 'reloaded on SIGHUP' && line.log_level === 'debug');
    const after = await api(url, 'GET', '/v1/sys/policies/acl/default', { token: rootToken });
    const served = await logLine(server, (line) => line.msg === 'request served' && line.request_id === after.body.request_id);
    expect(served).toMatchObject({ level: DEBUG, service: 'gateway', mount: 'sys/', path: 'policies/acl/default', operation: 'read', outcome: 'ok' });
    // Before the reload the level was info: no such line.
    expect(entries(server).some((line) => line.msg === 'request served' && line.request_id === before.body.request_id)).toBe(false);
  });

  test('a configuration that no longer parses on SIGHUP is logged and changes nothing', async () => {
    writeFileSync(configFile, configWith('loud'));
    server.child.kill('SIGHUP');
    const failed = await logLine(server, (line) => line.msg.startsWith('reload on SIGHUP failed'));
    expect(failed.error).toMatch(/log_level must be one of/);
    const after = await api(url, 'GET', '/v1/sys/policies/acl/default', { token: rootToken });
    expect(after.status).toBe(200);
    // Still at debug.
    await logLine(server, (line) => line.msg === 'request served' && line.request_id === after.body.request_id);
  });
});

describe('logs, distributed', () => {
  let topology: Topology;
  let gateway: string;
  let rootToken: string;
  const transit = () => topology.processes.find((p) => p.name === 'transit')!;

  beforeAll(async () => {
    topology = await startTopology('distributed', { services: ['transit'], serviceConfig: 'log_level = "debug"\n' });
    gateway = topology.urls[0];
    ({ rootToken } = await initAndUnseal(gateway));
    const mount = await api(gateway, 'POST', '/v1/sys/mounts/transit', { token: rootToken, body: { type: 'transit' } });
    expect(mount.status).toBe(204);
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
  });

  test('the engine service logs each request it serves with the gateway request id, never the data', async () => {
    const plaintext = Buffer.from('the launch codes').toString('base64');
    await eventually(async () => (await api(gateway, 'POST', '/v1/transit/keys/payments', { token: rootToken })).status === 200, 30_000);
    const encrypt = await api(gateway, 'POST', '/v1/transit/encrypt/payments', { token: rootToken, body: { plaintext } });
    expect(encrypt.status).toBe(200);

    const served = await logLine(transit(), (line) => line.msg === 'request served' && line.request_id === encrypt.body.request_id);
    expect(served).toMatchObject({
      level: DEBUG,
      service: 'transit',
      kind: 'operation',
      namespace: '',
      mount: 'transit/',
      path: 'encrypt/payments',
      operation: 'update',
      outcome: 'ok',
      duration_ms: expect.any(Number),
    });
    const ciphertext = (encrypt.body.data as { ciphertext: string }).ciphertext;
    const everything = transit().logs.join('\n');
    expect(everything).not.toContain(plaintext);
    expect(everything).not.toContain(ciphertext);
  });

  test('a request that fails is logged with its outcome and cause', async () => {
    const refused = await api(gateway, 'POST', '/v1/transit/decrypt/payments', { token: rootToken, body: { ciphertext: 'not a ciphertext' } });
    expect(refused.status).toBe(400);
    // An error answer carries no request id: the gateway's request line gives it.
    const gatewayLine = await logLine(topology.processes[0], (line) => line.msg === 'request' && line.path === '/v1/transit/decrypt/payments' && line.status === 400);
    const served = await logLine(transit(), (line) => line.msg === 'request served' && line.request_id === gatewayLine.request_id);
    expect(served).toMatchObject({ service: 'transit', path: 'decrypt/payments', outcome: 'bad-request', errors: refused.body.errors });
  });

  test('the service logs its start and its stop', async () => {
    expect(entries(transit()).find((line) => line.msg === 'service started')).toMatchObject({ service: 'transit' });
    const service = transit();
    await topology.stopProcess('transit');
    await logLine(service, (line) => line.msg === 'service stopped');
    // One service field per line.
    expect(service.logs.filter((line) => line.startsWith('{')).every((line) => line.match(/"service":/g)?.length === 1 && JSON.parse(line).service === 'transit')).toBe(true);
  });
});
