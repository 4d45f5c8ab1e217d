import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { SvcClient } from '@svc/sdk';
import { SVC_BIN } from '@svc/testing';
import { alternating, startDevServer, type Measurement } from '../run';
import type { Scenario } from './scenario';

/**
 * How fast a client command starts: `svc version` (no request), `svc status` (one request to the
 * dev server) and `svc kv get` (two), each run as a user runs it (a new Node process, to its exit),
 * beside `node -e 0`, the start of Node itself. Measured as starts per second of STARTS sequential runs (reqPerSec) and the
 * slowest start (p99Ms); floor and target alternate in rounds, as the machine is shared.
 */
const STARTS = 30;

function runOnce(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`${args.join(' ')} exited with ${code}`))));
  });
}

async function starts(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Measurement> {
  const times: number[] = [];
  for (let run = 0; run < STARTS; run++) times.push(await runOnce(args, env));
  const meanMs = times.reduce((sum, time) => sum + time, 0) / times.length;
  // The table's req/s column rounds starts per second to whole numbers: the mean start goes here.
  process.stderr.write(`    ${args.slice(-2).join(' ')}: mean ${meanMs.toFixed(0)} ms over ${STARTS} starts\n`);
  return { reqPerSec: 1000 / meanMs, p99Ms: Math.round(Math.max(...times)), errors: 0, non2xx: 0 };
}

const nodeAlone = () => starts(['-e', '0']);

export const cliVersionStart: Scenario = {
  name: 'cli-start-version',
  run: () => alternating('cli-start-version', nodeAlone, () => starts([SVC_BIN, 'version'])),
};

/** `svc ARGS` against a dev server (SVC_ADDR, SVC_TOKEN set), after `prepare` wrote what it reads. */
function againstDevServer(name: string, args: string[], prepare: (client: SvcClient) => Promise<unknown> = async () => undefined): Scenario {
  return {
    name,
    async run() {
      const server = await startDevServer();
      try {
        await prepare(new SvcClient({ address: server.url, token: server.token }));
        return await alternating(name, nodeAlone, () => starts([SVC_BIN, ...args], { SVC_ADDR: server.url, SVC_TOKEN: server.token }));
      } finally {
        await server.stop();
      }
    },
  };
}

export const cliStatusStart = againstDevServer('cli-start-status', ['status']);

/** A daily read: kv version 2 detected through sys/internal/ui/mounts, then the secret, printed as a table. */
export const cliKvGetStart = againstDevServer('cli-start-kv-get', ['kv', 'get', 'secret/bench'], (client) => client.kv('secret').put('bench', { password: 'p' }));
