import { SecretsManagerClient, PutSecretValueCommand, CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { api } from '@svc/testing';
import { startSecretsManagerEmulator } from '../../test/emulators/aws/secrets-manager';
import { startDevServer, type Measurement } from '../run';
import type { Scenario } from './scenario';

/**
 * Sync lag: a KV version 2 secret associated with a cloud-sm destination is written 100 times a
 * second; the lag of a write is the time from just before its request until the provider (the
 * Secrets Manager emulator, SigV4 checked) holds that value or a newer one (the worker coalesces
 * writes: the latest value wins). The floor writes the same values straight to the emulator with
 * the SDK at the same rate: the provider round trip alone. Reported: writes/s achieved and the p99
 * lag; the p50s go to stderr; the ratio is floor p99 / target p99.
 */
const RATE_PER_SECOND = 100;
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10);
const ACCESS_KEY = { id: 'AKIABENCHSYNC0001', secret: 'bench-sync-secret' };
const SECRET_NAME = 'bench-lag';

export interface Timing {
  sent: number[];
  /** Arrival time (ms) of each value n at the provider. */
  arrived: Map<number, number>;
}

function lagsOf(timing: Timing): number[] {
  // A write has arrived once the provider holds its value or any newer one.
  const arrivals = [...timing.arrived.entries()].sort((a, b) => a[0] - b[0]);
  return timing.sent.flatMap((sent, n) => {
    const first = arrivals.filter(([value]) => value >= n).reduce((earliest, [, at]) => Math.min(earliest, at), Infinity);
    return Number.isFinite(first) ? [first - sent] : [];
  });
}

export function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Writes n = 0, 1, ... at `rate` a second for the duration, then waits for the last to arrive. */
export async function paced(timing: Timing, write: (n: number) => Promise<void>, rate = RATE_PER_SECOND): Promise<Measurement> {
  const total = rate * DURATION_SECONDS;
  const start = Date.now();
  let errors = 0;
  const inFlight: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = start + (n * 1000) / rate;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    timing.sent[n] = Date.now();
    inFlight.push(write(n).catch(() => void errors++));
  }
  await Promise.all(inFlight);
  const deadline = Date.now() + 30_000;
  while (!timing.arrived.has(total - 1) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const elapsed = (Date.now() - start) / 1000;
  const lags = lagsOf(timing).sort((a, b) => a - b);
  process.stderr.write(`  lag p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms over ${lags.length} writes\n`);
  return { reqPerSec: total / Math.max(elapsed, DURATION_SECONDS), p99Ms: percentile(lags, 99), errors, non2xx: total - lags.length };
}

export const syncLag: Scenario = {
  name: 'sync-lag',
  async run() {
    let timing: Timing = { sent: [], arrived: new Map() };
    const emulator = await startSecretsManagerEmulator({ onValue: (_name, value) => timing.arrived.set((JSON.parse(value) as { n: number }).n, Date.now()) });
    emulator.accessKeys.set(ACCESS_KEY.id, { secretAccessKey: ACCESS_KEY.secret });
    const server = await startDevServer({ SVC_PROVIDER_ENDPOINT_CLOUD_SM: emulator.url });
    const client = new SecretsManagerClient({ region: 'us-east-1', endpoint: emulator.url, credentials: { accessKeyId: ACCESS_KEY.id, secretAccessKey: ACCESS_KEY.secret } });
    try {
      const call = async (method: string, path: string, body: unknown) => {
        const res = await api(server.url, method, `/v1/${path}`, { token: server.token, body });
        if (res.status >= 300) throw new Error(`${path}: ${res.status} ${res.text}`);
      };
      await client.send(new CreateSecretCommand({ Name: 'floor', SecretString: JSON.stringify({ n: -1 }) }));
      timing = { sent: [], arrived: new Map() };
      const floor = await paced(timing, async (n) => {
        await client.send(new PutSecretValueCommand({ SecretId: 'floor', SecretString: JSON.stringify({ n }) }));
      });

      await call('POST', 'sys/sync/destinations/cloud-sm/bench', { access_key_id: ACCESS_KEY.id, secret_access_key: ACCESS_KEY.secret, region: 'us-east-1' });
      await call('POST', `secret/data/${SECRET_NAME}`, { data: { n: -1 } });
      await call('POST', 'sys/sync/destinations/cloud-sm/bench/associations/set', { mount: 'secret', secret_name: SECRET_NAME });
      timing = { sent: [], arrived: new Map() };
      const target = await paced(timing, (n) => call('POST', `secret/data/${SECRET_NAME}`, { data: { n } }));
      return { name: 'sync-lag', target, floor, ratio: floor.p99Ms / target.p99Ms };
    } finally {
      client.destroy();
      await server.stop();
      await emulator.close();
    }
  },
};
