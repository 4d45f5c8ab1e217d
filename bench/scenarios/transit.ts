import { createCipheriv, randomBytes } from 'node:crypto';
import { api, eventually, initAndUnseal, startTopology } from '@svc/testing';
import { alternating, measure, startDevServer, startFloor, warmUp, type Measurement, type ScenarioResult, type Target } from '../run';
import type { Scenario } from './scenario';

/**
 * Transit encrypt of a 32-byte plaintext, all-in-one and distributed, each beside the bare
 * node:http + AES-256-GCM floor; and a 1,000-item batch beside a plain AES-256-GCM loop. Floor and
 * target are measured in alternating rounds (this machine is shared and its speed drifts).
 */
const KEY_PATH = '/v1/transit/keys/bench';
const ENCRYPT_PATH = '/v1/transit/encrypt/bench';
const BATCH_ITEMS = 1_000;
const RAW_CRYPTO_MS = 3_000;
const encryptBody = JSON.stringify({ plaintext: randomBytes(32).toString('base64') });

/** Mounts transit and creates the benchmark key, retrying while a service still waits for its keyring. */
export async function prepareTransit(url: string, token: string): Promise<void> {
  const mount = await api(url, 'POST', '/v1/sys/mounts/transit', { token, body: { type: 'transit' } });
  if (mount.status !== 204) throw new Error(`mounting transit failed: ${mount.status} ${mount.text}`);
  await eventually(async () => (await api(url, 'POST', KEY_PATH, { token })).status === 200, 30_000);
}

export function encryptTarget(url: string, token: string, pids: number[], body = encryptBody) {
  return { url, method: 'POST' as const, path: ENCRYPT_PATH, headers: { 'x-service-token': token, 'content-type': 'application/json' }, body, pids };
}

/**
 * Encrypt through `url` against the floor (a), a bare node:http + AES-256-GCM server running beside
 * it, in alternating rounds.
 */
async function againstFloor(name: string, target: Target): Promise<ScenarioResult> {
  const floor = await startFloor('aes-gcm');
  try {
    const floorTarget = encryptTarget(floor.url, 'bench-root', [floor.pid]);
    await warmUp(floorTarget);
    await warmUp(target);
    return await alternating(name, () => measure(floorTarget), () => measure(target));
  } finally {
    floor.stop();
  }
}

/** (b) the all-in-one dev server. */
export const transitEncrypt: Scenario = {
  name: 'transit-encrypt',
  async run() {
    const server = await startDevServer();
    try {
      await prepareTransit(server.url, server.token);
      return await againstFloor(this.name, encryptTarget(server.url, server.token, server.pids));
    } finally {
      await server.stop();
    }
  },
};

/** (c) gateway and transit as separate processes over NATS, with PostgreSQL and Redis. */
export const transitEncryptDistributed: Scenario = {
  name: 'transit-encrypt-distributed',
  needsPostgres: true,
  async run() {
    const topology = await startTopology('distributed', { services: ['transit'] });
    try {
      const url = topology.urls[0];
      const { rootToken } = await initAndUnseal(url);
      await prepareTransit(url, rootToken);
      // Every process of the topology: the gateway, the transit service (nats-server is not ours).
      const pids = topology.processes.map((p) => p.child.pid!);
      return await againstFloor(this.name, encryptTarget(url, rootToken, pids));
    } finally {
      await topology.stop();
    }
  },
};

/**
 * Items per second of a plain AES-256-GCM loop on 32-byte plaintexts, each with a fresh random
 * nonce (cut from one CSPRNG draw per 1,000, the cheapest honest source).
 */
function rawCryptoItemsPerSecond(): Measurement {
  const key = randomBytes(32);
  const plaintext = randomBytes(32);
  const started = performance.now();
  let items = 0;
  while (performance.now() - started < RAW_CRYPTO_MS) {
    const nonces = randomBytes(12 * 1_000);
    for (let i = 0; i < 1_000; i++, items++) {
      const cipher = createCipheriv('aes-256-gcm', key, nonces.subarray(i * 12, i * 12 + 12));
      cipher.update(plaintext);
      cipher.final();
      cipher.getAuthTag();
    }
  }
  return { reqPerSec: (items * 1_000) / (performance.now() - started), p99Ms: 0, errors: 0, non2xx: 0 };
}

/** A 1,000-item batch encrypt through the all-in-one server, in items per second. */
export const transitBatch: Scenario = {
  name: 'transit-batch',
  async run() {
    const server = await startDevServer();
    try {
      await prepareTransit(server.url, server.token);
      const batch_input = Array.from({ length: BATCH_ITEMS }, () => ({ plaintext: randomBytes(32).toString('base64') }));
      const target = encryptTarget(server.url, server.token, server.pids, JSON.stringify({ batch_input }));
      await warmUp(target);
      const items = async (): Promise<Measurement> => {
        const requests = await measure(target);
        const perItem = requests.cpuUsPerRequest === undefined ? undefined : requests.cpuUsPerRequest / BATCH_ITEMS;
        return { ...requests, reqPerSec: requests.reqPerSec * BATCH_ITEMS, cpuUsPerRequest: perItem };
      };
      return await alternating(this.name, async () => rawCryptoItemsPerSecond(), items);
    } finally {
      await server.stop();
    }
  },
};
