import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MountInfo } from '@svc/framework';
import { EmbeddedPhysical } from '@svc/storage';
import { engineContext, mountStorage, MountedBackend, refusal, testMount } from '@svc/testing';
import { createJwtBackendFactory } from '../jwt-backend';
import type { JwtAuthOptions } from '../method';

/** Short enough for a test to wait out, long enough for a local provider to answer. */
export const TEST_DEADLINE_MS = 1_000;

/**
 * The method's factory with calls to the provider that end within TEST_DEADLINE_MS, and a JWKS
 * fetched again as soon as a token names a key it lacks.
 */
function testFactory(options: JwtAuthOptions) {
  return createJwtBackendFactory({ providerDeadlineMs: TEST_DEADLINE_MS, jwksCooldownMs: 0, ...options });
}

export type MountJwt = (options?: JwtAuthOptions, type?: string) => Promise<MountedBackend>;

/**
 * Mounts of the method for the tests of the enclosing describe, each over storage of its own,
 * removed after each test. The storage is the embedded store's, in memory-backed mode: these specs
 * run as ES modules, where the in-memory store's import of sorted-btree (CommonJS, default export)
 * does not resolve to its class.
 */
export function jwtMounts(): MountJwt {
  const opened: { store: EmbeddedPhysical; dir: string }[] = [];
  afterEach(async () => {
    for (const { store, dir } of opened.splice(0)) {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  return async (options = {}, type = 'jwt') => {
    const dir = mkdtempSync(join(tmpdir(), 'auth-jwt-'));
    const store = new EmbeddedPhysical({ path: dir, temporary: true });
    await store.open();
    opened.push({ store, dir });
    const mount: MountInfo = testMount(type);
    const storage = mountStorage(mount, store);
    return new MountedBackend(testFactory(options)(mount, engineContext({ storage })), mount, storage);
  };
}

/** The backend another process builds of the same mount: its own provider cache, the same storage. */
export function sameMount(mounted: MountedBackend, options: JwtAuthOptions = {}): MountedBackend {
  return new MountedBackend(testFactory(options)(mounted.mount, engineContext({ storage: mounted.storage })), mounted.mount, mounted.storage);
}

/** A refusal's status and message, and how long it took to come. */
export async function timedRefusal(promise: Promise<unknown>): Promise<{ status: number; message: string; ms: number }> {
  const started = Date.now();
  const refused = await refusal(promise);
  return { ...refused, ms: Date.now() - started };
}
