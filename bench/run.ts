/**
 * `npm run bench`: each scenario measures the server beside its floor (a bare implementation of the
 * same work) in the same run, and reports the ratio, because this machine is shared and noisy.
 * Options: BENCH_DURATION (seconds per measurement, default 10), BENCH_CONNECTIONS (default 32),
 * BENCH_ROUNDS (floor/target pairs of the alternating scenarios, default 3), BENCH_ONLY
 * (comma-separated scenario names), BENCH_LOAD (the load generator: wrk or autocannon; default wrk
 * where it is installed, a C program that leaves a two-core machine's server more of the CPU).
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import * as path from 'node:path';
import { Client } from 'pg';
import { api, POSTGRES_URL, startServerProcess, type ServerProcess } from '@svc/testing';
import type { LoadGenerator, LoadResult, LoadSpec } from './load';
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
  /** Processes serving the target (with their children: a server's workers), whose CPU time is reported. */
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
  /** CPU cores the serving processes kept busy over the run (CPU time / wall time). */
  cores?: number;
  /** Requests answered over the run. */
  requests?: number;
  /** Memory of the serving processes after the run (the footprint scenario), MB. */
  memory?: Footprint;
}

/**
 * Memory of a process and its descendants, MB: RSS counts the pages they share (Node's own code)
 * once per process; PSS divides each shared page among its processes, so their PSS adds up to what
 * they take from the machine.
 */
export interface Footprint {
  rssMb: number;
  pssMb: number;
}

export function footprint(pid: number): Footprint {
  let rssKb = 0;
  let pssKb = 0;
  for (const each of withDescendants(pid)) {
    try {
      const rollup = readFileSync(`/proc/${each}/smaps_rollup`, 'utf8');
      rssKb += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      pssKb += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // The process has gone.
    }
  }
  return { rssMb: Math.round(rssKb / 1024), pssMb: Math.round(pssKb / 1024) };
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

/** The process and its descendants (a server's workers), from /proc; just the process where that cannot be read. */
function withDescendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    // No such file: the process has gone, or the kernel does not list children.
  }
  return [pid, ...children.flatMap(withDescendants)];
}

const totalCpu = (pids: number[]) => pids.flatMap(withDescendants).reduce((sum, pid) => sum + cpuMicros(pid), 0);

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
  const started = performance.now();
  const result = await generateLoad({
    generator: LOAD_GENERATOR,
    url: target.url,
    requests: target.requests ?? [{ method: target.method, path: target.path, body: target.body }],
    headers: target.headers ?? {},
    idReplacement: target.idReplacement ?? false,
    connections,
    seconds,
  });
  const cpuUs = totalCpu(pids) - cpuBefore;
  const wallUs = (performance.now() - started) * 1_000;
  const served = pids.length > 0 && result.total > 0;
  return {
    reqPerSec: result.reqPerSec,
    p99Ms: Math.round(result.p99Ms * 10) / 10,
    errors: result.errors,
    non2xx: result.non2xx,
    requests: result.total,
    cpuUsPerRequest: served ? cpuUs / result.total : undefined,
    cores: served ? cpuUs / wallUs : undefined,
  };
}

function loadGenerator(): LoadGenerator {
  const asked = process.env.BENCH_LOAD;
  if (asked === 'wrk' || asked === 'autocannon') return asked;
  if (asked) throw new Error(`BENCH_LOAD must be wrk or autocannon, not "${asked}"`);
  return spawnSync('wrk', ['--version']).error ? 'autocannon' : 'wrk';
}

export const LOAD_GENERATOR = loadGenerator();

/** Runs the load generator in a child process of its own (bench/load.ts). */
function generateLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = fork(path.join(__dirname, 'load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (answer: { result?: LoadResult; error?: string }) => (answer.result ? resolve(answer.result) : reject(new Error(`load generator: ${answer.error}`))));
    child.once('exit', (code) => reject(new Error(`load generator exited with ${code} before answering`)));
    child.send(spec);
  });
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

/** A file for a server's log: written by the server itself, never piped through the bench process. */
export function logFile(name: string): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'svc-bench-log-')), `${name}.log`);
}

export async function startDevServer(env?: NodeJS.ProcessEnv, workers = 1): Promise<ServerProcess & { url: string; token: string; pids: number[] }> {
  const args = ['-dev', '-dev-root-token-id=bench-root', '-dev-listen-address=127.0.0.1:0', `-workers=${workers}`];
  const server = await startServerProcess('bench-dev', args, undefined, { env, logFile: logFile('bench-dev') });
  return Object.assign(server, { url: `http://${server.addresses[0]}`, token: 'bench-root', pids: [server.child.pid!] });
}

/** Whether PostgreSQL answers at POSTGRES_URL (scenarios that need it are skipped when it does not). */
async function postgresReachable(): Promise<boolean> {
  const client = new Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',');
  const results: ScenarioResult[] = [];
  let postgres: boolean | undefined;
  for (const scenario of SCENARIOS) {
    if (only && !only.includes(scenario.name)) continue;
    if (scenario.needsPostgres && !(postgres ??= await postgresReachable())) {
      process.stderr.write(`skipping ${scenario.name}: it needs PostgreSQL, which does not answer at ${new URL(POSTGRES_URL).host}\n`);
      continue;
    }
    process.stderr.write(`running ${scenario.name} (${DURATION}s each, ${CONNECTIONS} connections, ${LOAD_GENERATOR})\n`);
    results.push(...[await scenario.run()].flat());
  }
  const cpu = (m: Measurement) => (m.cpuUsPerRequest === undefined ? '' : m.cpuUsPerRequest.toFixed(0));
  const cores = (m: Measurement) => (m.cores === undefined ? '' : m.cores.toFixed(2));
  const rows = results.map(
    (r) =>
      `| ${r.name} | ${r.target.reqPerSec.toFixed(0)} | ${r.target.p99Ms} | ${cpu(r.target)} | ${cores(r.target)} | ${r.floor.reqPerSec.toFixed(0)} | ${r.floor.p99Ms} | ${cpu(r.floor)} | ${cores(r.floor)} | ${(r.ratio * 100).toFixed(0)} % | ${r.target.errors + r.target.non2xx} |`,
  );
  process.stdout.write(
    [
      '| scenario | req/s | p99 ms | CPU µs/req | cores | floor req/s | floor p99 ms | floor CPU µs/req | floor cores | ratio | errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n') + '\n',
  );
  const footprints = results.filter((r) => r.target.memory && r.floor.memory);
  if (footprints.length === 0) return;
  const mb = (m: Measurement) => `${m.memory!.rssMb} | ${m.memory!.pssMb}`;
  process.stdout.write(
    [
      '',
      '| scenario | RSS MB | PSS MB | floor RSS MB | floor PSS MB | PSS over floor |',
      '|---|---|---|---|---|---|',
      ...footprints.map((r) => `| ${r.name} | ${mb(r.target)} | ${mb(r.floor)} | ${r.target.memory!.pssMb - r.floor.memory!.pssMb} |`),
    ].join('\n') + '\n',
  );
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
