/**
 * The load generator, in a process of its own (forked by `measure` in run.ts), so that what the
 * bench process does (reading logs, gathering results) never competes with the load or is counted
 * as the server's cost. Takes a LoadSpec over IPC and answers with a LoadResult, from wrk or from
 * autocannon as the spec says (run.ts chooses).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import * as path from 'node:path';
import autocannon from 'autocannon';

type Method = 'GET' | 'POST' | 'PUT';
const REQUEST_TIMEOUT_SECONDS = 10;
export type LoadGenerator = 'wrk' | 'autocannon';

export interface LoadSpec {
  generator: LoadGenerator;
  /** The server's base URL (scheme, host and port). */
  url: string;
  /** Cycled through, one request after another; `[<id>]` in a path or body is replaced by a fresh id per request when `idReplacement` is set. */
  requests: { method: Method; path: string; body?: string }[];
  headers: Record<string, string>;
  idReplacement: boolean;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  total: number;
  reqPerSec: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** Answers with an error status (wrk counts 4xx and 5xx, autocannon everything but 2xx). */
  non2xx: number;
}

async function withAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url + spec.requests[0].path,
    headers: spec.headers,
    requests: spec.requests,
    idReplacement: spec.idReplacement,
    connections: spec.connections,
    duration: spec.seconds,
    pipelining: 1,
  });
  return { total: result.requests.total, reqPerSec: result.requests.average, p99Ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}

/** A Lua string literal of any text: hex-encoded, decoded when the script loads. */
const luaText = (text: string) => `unhex("${Buffer.from(text, 'utf8').toString('hex')}")`;

/**
 * wrk's script: requests cycled through, ids unique per thread and per run, and the summary
 * written as JSON to `resultFile` when the run ends.
 */
function wrkScript(spec: LoadSpec, resultFile: string): string {
  const requests = spec.requests.map((r) => `{ method = ${luaText(r.method)}, path = ${luaText(r.path)}, body = ${r.body === undefined ? 'nil' : luaText(r.body)} }`);
  const headers = Object.entries(spec.headers).map(([name, value]) => `[${luaText(name)}] = ${luaText(value)}`);
  return `
local function unhex(s) return (s:gsub("..", function(c) return string.char(tonumber(c, 16)) end)) end
local requests = { ${requests.join(', ')} }
local headers = { ${headers.join(', ')} }
local replace_ids = ${spec.idReplacement}
local threads = 0
local sent = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end
function request()
  local r = requests[sent % #requests + 1]
  sent = sent + 1
  local p, b = r.path, r.body
  if replace_ids then
    local id = ${luaText(randomBytes(4).toString('hex'))} .. "-" .. thread_number .. "-" .. sent
    p = p:gsub("%[<id>%]", id)
    if b then b = b:gsub("%[<id>%]", id) end
  end
  return wrk.format(r.method, p, headers, b)
end
function done(summary, latency, requests)
  local e = summary.errors
  local f = io.open(${luaText(resultFile)}, "w")
  f:write(string.format('{"total":%d,"duration_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}',
    summary.requests, summary.duration, latency:percentile(99), e.connect + e.read + e.write + e.timeout, e.status))
  f:close()
end
`;
}

async function withWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-wrk-'));
  try {
    const script = path.join(dir, 'load.lua');
    const resultFile = path.join(dir, 'result.json');
    writeFileSync(script, wrkScript(spec, resultFile));
    const threads = Math.max(1, Math.min(spec.connections, cpus().length));
    // autocannon's timeout: slow requests (a transit batch) are measured, not counted as errors.
    const args = [`-t${threads}`, `-c${spec.connections}`, `-d${spec.seconds}s`, `--timeout`, `${REQUEST_TIMEOUT_SECONDS}s`, '--latency', '-s', script, spec.url];
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const child = spawn('wrk', args, { stdio: ['ignore', 'ignore', 'inherit'] });
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (exitCode !== 0) throw new Error(`wrk exited with ${exitCode}`);
    const result = JSON.parse(readFileSync(resultFile, 'utf8')) as { total: number; duration_us: number; p99_us: number; errors: number; non2xx: number };
    return {
      total: result.total,
      reqPerSec: result.total / (result.duration_us / 1e6),
      p99Ms: result.p99_us / 1000,
      errors: result.errors,
      non2xx: result.non2xx,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.once('message', (spec: LoadSpec) => {
  (spec.generator === 'wrk' ? withWrk(spec) : withAutocannon(spec)).then(
    (result) => process.send!({ result }, () => process.disconnect()),
    (err: unknown) => process.send!({ error: err instanceof Error ? err.message : String(err) }, () => process.disconnect()),
  );
});
