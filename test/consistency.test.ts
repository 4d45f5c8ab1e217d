/**
 * Read-your-writes across gateway workers and replicas (test/consistency/checker.ts): clients on
 * fresh connections change and read tokens, mounts, policies, KV secrets and auth methods through
 * any worker of any gateway, right after the first unseal and again right after a seal and unseal,
 * and no read may miss an acknowledged change or go back to an older state. The short form runs
 * here; `npm run soak` runs the same for minutes (CONSISTENCY_SECONDS, CONSISTENCY_CLIENTS).
 */
import { api, startTopology, type Topology, type TopologyKind } from '@svc/testing';
import { runChecker, type CheckerReport } from './consistency/checker';

const SECONDS = Number(process.env.CONSISTENCY_SECONDS ?? 8);
const CLIENTS = Number(process.env.CONSISTENCY_CLIENTS ?? 8);

describe.each<[TopologyKind, number, 'embedded' | 'postgresql']>([
  ['all-in-one', 1, 'embedded'],
  ['all-in-one', 1, 'postgresql'],
  ['distributed', 2, 'postgresql'],
])('every acknowledged change is observed everywhere, %s with %i gateway(s) of two workers on %s storage', (kind, gateways, storage) => {
  let topology: Topology;
  let root: string;
  let key: string;

  const check = async (phase: string): Promise<CheckerReport> => {
    const report = await runChecker({
      urls: topology.urls,
      rootToken: root,
      clients: CLIENTS,
      durationMs: SECONDS * 1000,
      progress: SECONDS > 60 ? (line) => process.stdout.write(`${kind} ${phase}: ${line}\n`) : undefined,
    });
    if (report.violations.length + report.unexpected.length > 0) {
      // What the servers warned of meanwhile (a resync, a failed application) says why.
      const warnings = topology.processes.flatMap((server) => server.logs.filter((line) => /"level":(4|5|6)0/.test(line)).map((line) => `${server.name}: ${line}`));
      process.stdout.write(`${kind} ${phase}: server warnings:\n${warnings.slice(-40).join('\n')}\n`);
    }
    expect({ violations: report.violations.slice(0, 10), unexpected: report.unexpected.slice(0, 10) }).toEqual({ violations: [], unexpected: [] });
    // Enough happened for the run to mean something: each client wrote and read many times.
    expect(report.operations).toBeGreaterThan(CLIENTS * 5);
    expect(report.reads).toBeGreaterThan(CLIENTS * 5);
    return report;
  };

  const unseal = async () => {
    const answer = await api<{ sealed: boolean }>(topology.urls[0], 'PUT', '/v1/sys/unseal', { body: { key }, headers: { connection: 'close' } });
    expect(answer.body.sealed).toBe(false);
  };

  beforeAll(async () => {
    topology = await startTopology(kind, { workers: 2, gateways, services: kind === 'distributed' ? ['transit'] : [], allInOneStorage: storage });
    const init = await api<{ keys: string[]; root_token: string }>(topology.urls[0], 'PUT', '/v1/sys/init', { body: { secret_shares: 1, secret_threshold: 1 } });
    ({ root_token: root, keys: [key] } = init.body);
  }, 180_000);

  afterAll(async () => {
    await topology?.stop();
  });

  test(
    'from the moment the first unseal returns',
    async () => {
      await unseal();
      // A provisioning script's first steps, each on a fresh connection: the new mount is known everywhere.
      const call = (method: string, path: string, body?: unknown) =>
        api(topology.urls[Math.floor(Math.random() * gateways)], method, path, { token: root, body, headers: { connection: 'close' } });
      expect((await call('POST', '/v1/sys/mounts/transit', { type: 'transit' })).status).toBe(204);
      for (const name of ['k1', 'k2', 'k3', 'k4']) {
        const created = await call('POST', `/v1/transit/keys/${name}`);
        expect({ name, status: created.status, errors: created.body.errors }).toEqual({ name, status: 200, errors: undefined });
      }
      await check('after unseal');
    },
    SECONDS * 1000 + 120_000,
  );

  test(
    'after a seal and unseal, nothing acknowledged before or after is lost or resurrected',
    async () => {
      const sealed = await api(topology.urls[gateways - 1], 'PUT', '/v1/sys/seal', { token: root, headers: { connection: 'close' } });
      expect(sealed.status).toBe(204);
      await unseal();
      await check('after seal and unseal');
    },
    SECONDS * 1000 + 120_000,
  );
});
