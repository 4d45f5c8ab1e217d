/**
 * The embedded data directory of the all-in-one server: used by one server at a time (each of its
 * workers opens it), private to the server's user whatever umask it was started with, and nothing
 * acknowledged is lost when a worker, or the whole server, is killed in the middle of writes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, initAndUnseal, PLAIN_LISTENER, startServerProcess, type ServerProcess } from '@svc/testing';

describe('embedded data directory', () => {
  let dir: string;
  let config: string;
  const running: ServerProcess[] = [];
  const start = async (name: string, args: string[] = [], configFile = config) => {
    const server = await startServerProcess(name, [`-config=${configFile}`, ...args], undefined, { umask: 0 });
    running.push(server);
    return { server, url: `http://${server.addresses[0]}` };
  };

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-data-dir-'));
    config = path.join(dir, 'server.hcl');
    writeFileSync(config, `${PLAIN_LISTENER}\nstorage "embedded" {\n  path = "${path.join(dir, 'data')}"\n}\n`);
  });
  afterAll(async () => {
    await Promise.all(running.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('is private, refuses a second server, and is taken over after its server died', async () => {
    const first = await start('first');
    const { rootToken, keys } = await initAndUnseal(first.url);
    const auditDir = path.join(dir, 'audit');
    const auditBody = { type: 'file', options: { file_path: path.join(auditDir, 'audit.log') } };
    expect((await api(first.url, 'PUT', '/v1/sys/audit/file', { token: rootToken, body: auditBody })).status).toBe(204);
    expect((await api(first.url, 'POST', '/v1/secret/app', { token: rootToken, body: { password: 'kept' } })).status).toBe(204);

    // Started with umask 000, yet nothing the server wrote is open to other users.
    const open = [path.join(dir, 'data'), auditDir]
      .flatMap((root) => [root, ...readdirSync(root, { recursive: true, encoding: 'utf8' }).map((entry) => path.join(root, entry))])
      .map((file) => ({ file, mode: statSync(file).mode }))
      .filter(({ mode }) => (mode & 0o077) !== 0);
    expect(open).toEqual([]);
    expect(statSync(path.join(dir, 'data')).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(auditDir, 'audit.log')).mode & 0o777).toBe(0o600);

    await expect(start('second')).rejects.toThrow(/data directory .*data is in use by another server or storage migration \(pid \d+/);
    const read = await api<{ data: { password: string } }>(first.url, 'GET', '/v1/secret/app', { token: rootToken });
    expect(read.body.data.password).toBe('kept');

    // A server killed outright leaves its lock behind; the next server takes the directory over.
    await new Promise<void>((resolve) => {
      first.server.child.once('exit', () => resolve());
      first.server.child.kill('SIGKILL');
    });
    const third = await start('third');
    expect((await api(third.url, 'PUT', '/v1/sys/unseal', { body: { key: keys[0] } })).status).toBe(200);
    const again = await api<{ data: { password: string } }>(third.url, 'GET', '/v1/secret/app', { token: rootToken });
    expect(again.body.data.password).toBe('kept');
  });

  test('keeps every acknowledged write when a worker, then the whole server, is killed mid-write', async () => {
    const ownConfig = path.join(dir, 'writers.hcl');
    writeFileSync(ownConfig, `${PLAIN_LISTENER}\nstorage "embedded" {\n  path = "${path.join(dir, 'writers-data')}"\n}\n`);
    const first = await start('writers', ['-workers=2'], ownConfig);
    const { rootToken, keys } = await initAndUnseal(first.url);
    const workers = () => execFileSync('pgrep', ['-P', String(first.server.child.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
    const acknowledged = new Map<string, string>();
    let writing = true;
    // Clients on fresh connections, so the writes go to both workers.
    const writer = async (client: number) => {
      for (let i = 0; writing; i++) {
        const name = `durable/${client}-${i}`;
        const value = `${client}:${i}`;
        const answer = await api(first.url, 'POST', `/v1/secret/${name}`, { token: rootToken, body: { value }, headers: { connection: 'close' } }).catch(() => undefined);
        if (answer?.status === 204) acknowledged.set(name, value);
      }
    };
    const clients = Array.from({ length: 8 }, (_, client) => writer(client));
    const ackedAfter = async (count: number) => {
      while (acknowledged.size < count) await new Promise((resolve) => setImmediate(resolve));
    };
    await ackedAfter(100);
    const [victim] = workers();
    process.kill(victim, 'SIGKILL');
    await ackedAfter(acknowledged.size + 100);
    // The whole server at once, writes still under way.
    for (const pid of [first.server.child.pid!, ...workers()]) process.kill(pid, 'SIGKILL');
    writing = false;
    await Promise.all(clients);
    const { child } = first.server;
    await new Promise<void>((resolve) => (child.exitCode === null && child.signalCode === null ? child.once('exit', () => resolve()) : resolve()));

    const again = await start('after-kill', [], ownConfig);
    expect((await api(again.url, 'PUT', '/v1/sys/unseal', { body: { key: keys[0] } })).status).toBe(200);
    const lost: string[] = [];
    for (const [name, value] of acknowledged) {
      const read = await api<{ data?: { value: string } }>(again.url, 'GET', `/v1/secret/${name}`, { token: rootToken });
      if (read.body.data?.value !== value) lost.push(`${name}: ${read.status} ${JSON.stringify(read.body)}`);
    }
    expect(lost).toEqual([]);
    expect(acknowledged.size).toBeGreaterThan(200);
  });
});
