// `npm run test:built`: every suite, after a build. The end-to-end suites spend most of their time
// waiting on the servers they start, so they run in shards side by side (E2E_SHARDS, default 2),
// beside the unit tests and the shared-state suites with two gateway workers per server (README,
// "Tests"). Each run's output is kept apart and shown when it ends; any run failing fails the whole.
// Arguments, when given, go to one plain jest run instead (`npm run test:built -- test/kv.test.ts`).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const env = { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, '--experimental-vm-modules'].filter(Boolean).join(' ') };

/**
 * Suites that mostly wait for due times (the minute's periodic pass, snapshot intervals): a run of
 * their own beside the shards, which they would lengthen by their waiting alone.
 */
const WAITING_SUITES = ['test/periodic-once.test.ts'];

/** Suites whose state every worker must share the moment a call returns, run again with two workers. */
const WORKERS_SUITES = ['test/access.test.ts', 'test/auth-methods.test.ts', 'test/identity.test.ts', 'test/platform.test.ts', 'test/rekey.test.ts', 'test/replication-forward.test.ts'];

function runs() {
  const given = process.argv.slice(2);
  if (given.length > 0) return [{ name: 'jest', args: ['--runInBand', ...given] }];
  const shards = Number(process.env.E2E_SHARDS ?? 2);
  if (!Number.isInteger(shards) || shards < 1) throw new Error(`E2E_SHARDS must be a positive integer, not ${process.env.E2E_SHARDS}`);
  return [
    { name: 'unit', args: ['--runInBand', '--selectProjects', 'unit'] },
    ...Array.from({ length: shards }, (_, i) => ({
      name: `e2e ${i + 1}/${shards}`,
      args: ['--runInBand', '--testPathIgnorePatterns', ...WAITING_SUITES, '--selectProjects', 'e2e', `--shard=${i + 1}/${shards}`],
    })),
    { name: 'e2e, waiting on due times', args: ['--runInBand', ...WAITING_SUITES] },
    { name: 'e2e, two gateway workers', args: ['--runInBand', ...WORKERS_SUITES], env: { SVC_TEST_WORKERS: '2' } },
  ];
}

function start({ name, args, env: extra }) {
  const started = Date.now();
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tests-')), 'output.log');
  const out = fs.openSync(file, 'w');
  const child = spawn(process.execPath, [jest, ...args], { cwd: root, env: { ...env, ...extra }, stdio: ['ignore', out, out] });
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      fs.closeSync(out);
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`\n=== ${name}: ${code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds} s ===\n`);
      process.stdout.write(fs.readFileSync(file));
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      resolve({ name, ok: code === 0, seconds });
    });
  });
}

async function main() {
  const all = runs();
  process.stdout.write(`running ${all.map(({ name }) => name).join(', ')} side by side\n`);
  const results = await Promise.all(all.map(start));
  process.stdout.write(`\n${results.map(({ name, ok, seconds }) => `${ok ? 'passed' : 'FAILED'}  ${name} (${seconds} s)`).join('\n')}\n`);
  process.exitCode = results.every(({ ok }) => ok) ? 0 : 1;
}

void main();
