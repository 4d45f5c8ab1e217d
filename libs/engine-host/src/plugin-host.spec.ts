import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { testMount } from '@svc/testing';
import { Barrier, InmemPhysical, Keyring } from '@svc/storage';
import { PLUGIN_PROTOCOL_VERSION } from './plugin-protocol';
import { PluginHost, type PluginLaunch } from './plugin-host';
import type { EngineRequest } from './protocol';

/** A plugin that says hello, reads its requests and never answers one. */
const SILENT_PLUGIN = `#!${process.execPath}
process.stdout.write(JSON.stringify({ type: 'hello', protocol: ${PLUGIN_PROTOCOL_VERSION} }) + '\\n');
process.stdin.resume();
`;

describe('PluginHost', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-plugin-host-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers 503 for a plugin that does not answer within the request deadline, and holds up no other mount', async () => {
    const command = path.join(dir, 'silent');
    writeFileSync(command, SILENT_PLUGIN);
    chmodSync(command, 0o755);
    const launch: PluginLaunch = { name: 'silent', command, args: [], env: [], sha256: createHash('sha256').update(readFileSync(command)).digest('hex') };
    const barrier = new Barrier(new InmemPhysical());
    barrier.unseal(Keyring.generate());
    const requestTimeoutMs = 500;
    const host = new PluginHost(barrier, async () => launch, pino({ level: 'silent' }), { requestTimeoutMs });
    const request = (mountPath: string) =>
      ({ kind: 'operation', requestId: 'r', mount: testMount('silent', { path: mountPath }), operation: 'read', path: 'x', data: {}, capabilities: ['read'] }) as unknown as EngineRequest;
    try {
      // Two mounts, two processes: each request is answered by its own deadline.
      const answers = await Promise.all([host.handle(request('one/')), host.handle(request('two/'))]);
      for (const answer of answers) expect(answer).toEqual({ ok: false, kind: 'unavailable', errors: ['plugin "silent" did not answer within 0.5 s'] });
    } finally {
      await host.closeAll();
    }
  });
});
