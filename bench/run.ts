/**
 * `npm run bench`: each scenario measures the server beside its floor (a bare implementation of the
 * same work) in the same run, and reports the ratio, because this machine is shared and noisy.
 * Options: BENCH_DURATION (seconds per measurement, default 10), BENCH_CONNECTIONS (default 32),
 * BENCH_ROUNDS (floor/target pairs of the alternating scenarios, default 3), BENCH_ONLY
 * (comma-separated scenario names).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import * as path from 'node:path';
import autocannon from 'autocannon';
import { api, startServerProcess, type ServerProcess } from '@svc/testing';
import { SCENARIOS } from './scenarios';

export interface Target {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Distinct requests cycled through (e.g. writes to different keys). */
  requests?: { method: 'GET' | 'POST' | 'PUT'; path: string; body?: string }[];
  /** Replaces `[<id>]` in the path and body with a fresh id per request (e.g. every write a new key). */
  idReplacement?: boolean;
  /** Processes serving the target, whose CPU time per request is reported. */
  pids?: number[];
}

export interface Measurement {
  reqPerSec: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /**
   * CPU time the serving processes spent per request (µs, user + system): steadier than req/s on a
   * shared machine, and what a change to the hot path moves.
   */
  cpuUsPerRequest?: number;
}

/** CPU time (µs) a process has used so far, from /proc (Linux); 0 when it cannot be read. */
export function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, in clock ticks of 10 ms
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

const totalCpu = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuMicros(pid), 0);

export interface ScenarioResult {
  name: string;
  target: Measurement;
  floor: Measurement;
  ratio: number;
}

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARM_UP_SECONDS = 2;

/** Load that is not measured, so the first round does not pay for the JIT compiler's start. */
export async function warmUp(target: Target): Promise<void> {
  await measure(target, CONNECTIONS, WARM_UP_SECONDS);
}

/**
 * Measures floor and target alternately, BENCH_ROUNDS times, and reports the round whose ratio is
 * the median. This machine's speed drifts by a fifth within a minute; pairs measured back to back
 * see the same machine, and the median ignores a pair that straddled a change.
 */
export async function alternating(name: string, floor: () => Promise<Measurement>, target: () => Promise<Measurement>): Promise<ScenarioResult> {
  const rounds: ScenarioResult[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const floorMeasurement = await floor();
    const targetMeasurement = await target();
    rounds.push({ name, target: targetMeasurement, floor: floorMeasurement, ratio: targetMeasurement.reqPerSec / floorMeasurement.reqPerSec });
    process.stderr.write(`  round ${round + 1}: ${(rounds[round].ratio * 100).toFixed(0)} %\n`);
  }
  rounds.sort((a, b) => a.ratio - b.ratio);
  return rounds[Math.floor(rounds.length / 2)];
}

export async function measure(target: Target, connections = CONNECTIONS, seconds = DURATION): Promise<Measurement> {
  const pids = target.pids ?? [];
  const cpuBefore = totalCpu(pids);
  const result = await autocannon({
    url: target.url + target.path,
    method: target.method,
    headers: target.headers,
    body: target.body,
    requests: target.requests?.map((r) => ({ method: r.method, path: r.path, body: r.body })),
    idReplacement: target.idReplacement,
    connections,
    duration: seconds,
    pipelining: 1,
  });
  const cpuUsPerRequest = pids.length > 0 && result.requests.total > 0 ? (totalCpu(pids) - cpuBefore) / result.requests.total : undefined;
  return { reqPerSec: result.requests.average, p99Ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx, cpuUsPerRequest };
}

/**
 * Runs a floor from dist-bench/bench/floors in its own process; resolves with its base URL and the
 * rest of the line it announced itself with (`info`).
 */
export function startFloor(name: string, env: NodeJS.ProcessEnv = {}): Promise<{ url: string; pid: number; info: Record<string, unknown>; stop(): void }> {
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'floors', `${name}.js`)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const info = JSON.parse(line) as { port: number };
      resolve({ url: `http://127.0.0.1:${info.port}`, pid: child.pid!, info, stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`floor ${name} exited with ${code}`)));
  });
}

/** The all-in-one dev server with a known root token. */
/** Sends one setup request and fails the scenario with the server's answer if it is refused. */
export async function setUp(url: string, token: string, path: string, body: unknown): Promise<void> {
  const res = await api(url, 'POST', path, { token, body });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${res.text}`);
}

export async function startDevServer(env?: NodeJS.ProcessEnv): Promise<ServerProcess & { url: string; token: string; pids: number[] }> {
  const server = await startServerProcess('bench-dev', ['-dev', '-dev-root-token-id=bench-root', '-dev-listen-address=127.0.0.1:0'], undefined, { env });
  return Object.assign(server, { url: `http://${server.addresses[0]}`, token: 'bench-root', pids: [server.child.pid!] });
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',');
  const results: ScenarioResult[] = [];
  for (const scenario of SCENARIOS) {
    if (only && !only.includes(scenario.name)) continue;
    process.stderr.write(`running ${scenario.name} (${DURATION}s each, ${CONNECTIONS} connections)\n`);
    results.push(await scenario.run());
  }
  const cpu = (m: Measurement) => (m.cpuUsPerRequest === undefined ? '' : m.cpuUsPerRequest.toFixed(0));
  const rows = results.map(
    (r) =>
      `| ${r.name} | ${r.target.reqPerSec.toFixed(0)} | ${r.target.p99Ms} | ${cpu(r.target)} | ${r.floor.reqPerSec.toFixed(0)} | ${r.floor.p99Ms} | ${cpu(r.floor)} | ${(r.ratio * 100).toFixed(0)} % | ${r.target.errors + r.target.non2xx} |`,
  );
  process.stdout.write(
    [
      '| scenario | req/s | p99 ms | CPU µs/req | floor req/s | floor p99 ms | floor CPU µs/req | ratio | errors |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n') + '\n',
  );
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
