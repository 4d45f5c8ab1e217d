import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { closedPort, SVC_BIN } from '@svc/testing';
import { alternating, type Measurement } from '../run';
import type { Scenario } from './scenario';

/**
 * How soon a new server answers: `svc server -dev` until sys/health answers 200 (initialized and
 * unsealed), and `svc server` on a new embedded data directory until it answers 501 (ready to
 * init); the floor is a bare node:http server started the same way until it answers. Each is
 * started STARTS times; reqPerSec is starts per second of the mean start, p99Ms the slowest.
 */
const STARTS = 10;
const POLL_MS = 10;

/** Resolves with the status of GET `path`, or undefined while nothing listens. */
function status(port: number, urlPath: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.once('error', () => resolve(undefined));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

/** Milliseconds from spawning `args` (given a free port) until GET `urlPath` answers `expected`. */
async function timeToAnswer(args: (port: number) => string[], urlPath: string, expected: number): Promise<number> {
  const port = await closedPort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, args(port), { stdio: 'ignore' });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args(port).join(' ')} exited with ${child.exitCode}`);
      if ((await status(port, urlPath)) === expected) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    await new Promise<void>((exited) => {
      if (child.exitCode !== null) return exited();
      child.once('exit', () => exited());
      child.kill('SIGTERM');
    });
  }
}

async function starts(name: string, once: () => Promise<number>): Promise<Measurement> {
  const times: number[] = [];
  for (let run = 0; run < STARTS; run++) times.push(await once());
  const meanMs = times.reduce((sum, time) => sum + time, 0) / times.length;
  process.stderr.write(`    ${name}: mean ${meanMs.toFixed(0)} ms over ${STARTS} starts\n`);
  return { reqPerSec: 1000 / meanMs, p99Ms: Math.round(Math.max(...times)), errors: 0, non2xx: 0 };
}

const BARE_SERVER = "require('node:http').createServer((req, res) => res.end('{}')).listen(Number(process.argv[1]), '127.0.0.1')";
const bareServer = () => starts('node:http', () => timeToAnswer((port) => ['-e', BARE_SERVER, String(port)], '/', 200));

export const devServerStart: Scenario = {
  name: 'server-start-dev',
  run: () =>
    alternating('server-start-dev', bareServer, () =>
      starts('svc server -dev', () => timeToAnswer((port) => [SVC_BIN, 'server', '-dev', `-dev-listen-address=127.0.0.1:${port}`], '/v1/sys/health', 200)),
    ),
};

/** A new data directory each start: the first start creates and lays out the store. */
function embeddedFirstStart(): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-start-'));
  const config = path.join(dir, 'server.hcl');
  return timeToAnswer(
    (port) => {
      writeFileSync(config, `workers = 1\nlistener "tcp" {\n  address = "127.0.0.1:${port}"\n  tls_disable = true\n}\nstorage "embedded" {\n  path = "${path.join(dir, 'data')}"\n}\n`);
      return [SVC_BIN, 'server', `-config=${config}`];
    },
    '/v1/sys/health',
    501,
  ).finally(() => rmSync(dir, { recursive: true, force: true }));
}

export const embeddedServerFirstStart: Scenario = {
  name: 'server-start-embedded',
  run: () => alternating('server-start-embedded', bareServer, () => starts('svc server, new embedded directory', embeddedFirstStart)),
};
