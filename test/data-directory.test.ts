/**
 * The embedded data directory of the all-in-one server: used by one server at a time, and private
 * to the server's user whatever umask it was started with.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, initAndUnseal, PLAIN_LISTENER, startServerProcess, type ServerProcess } from '@svc/testing';

describe('embedded data directory', () => {
  let dir: string;
  let config: string;
  const running: ServerProcess[] = [];
  const start = async (name: string) => {
    const server = await startServerProcess(name, [`-config=${config}`], undefined, { umask: 0 });
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
});
