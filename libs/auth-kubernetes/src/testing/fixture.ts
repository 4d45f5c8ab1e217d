/**
 * What the method's specs share: the Kubernetes API emulator over TLS (a real HTTPS server with a
 * test CA), an account allowed to review tokens and read namespaces and service accounts, and a
 * mount of the method. The pod's service-account directory is an empty directory of each test, so
 * the machine's own (when the tests run in a pod) never takes part.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCa, MountedBackend } from '@svc/testing';
import { startKubernetesApi, type KubernetesApiEmulator } from '../../../../test/emulators/kubernetes-api';
import { SERVICE_ACCOUNT_DIR_ENV } from '../api-server';
import { kubernetesBackendFactoryWith, type KubernetesAuthOptions } from '../backend';

export { tamperedToken } from '../../../../test/emulators/kubernetes-api';
export { startStallingProxy } from '../../../../test/emulators/stalling-proxy';

export interface KubernetesFixture {
  api: KubernetesApiEmulator;
  /** PEM of the CA the emulator's certificate chains to. */
  caCert: string;
  /** A token of `vault/reviewer`, which may create tokenreviews and get namespaces and serviceaccounts. */
  reviewerJwt: string;
  /** The pod's service-account directory in this test (empty until the test writes to it). */
  podDir: string;
  /** A mount of the method over fresh storage. */
  mount(options?: KubernetesAuthOptions): MountedBackend;
  /** A mount configured for the emulator with the reviewer's token; `config` adds to or overrides that. */
  configured(config?: Record<string, unknown>, options?: KubernetesAuthOptions): Promise<MountedBackend>;
}

export function kubernetesFixture(): KubernetesFixture {
  let dir = '';
  const previousPodDir = process.env[SERVICE_ACCOUNT_DIR_ENV];
  const fixture = {
    mount: (options: KubernetesAuthOptions = {}) => MountedBackend.create(kubernetesBackendFactoryWith(options), 'kubernetes', { mount: { path: 'kubernetes/' } }),
    configured: async (config: Record<string, unknown> = {}, options: KubernetesAuthOptions = {}) => {
      const mounted = fixture.mount(options);
      await mounted.write('config', { kubernetes_host: fixture.api.url, kubernetes_ca_cert: fixture.caCert, token_reviewer_jwt: fixture.reviewerJwt, ...config });
      return mounted;
    },
  } as KubernetesFixture;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-auth-kubernetes-'));
    const ca = createTestCa(join(dir, 'ca'), 'svc auth-kubernetes test CA');
    fixture.caCert = readFileSync(ca.caCert, 'utf8');
    fixture.api = await startKubernetesApi(ca.issue('kubernetes', ['127.0.0.1']));
    fixture.api.addServiceAccount('vault', 'reviewer', { permissions: ['create tokenreviews', 'get namespaces', 'get serviceaccounts'] });
    fixture.reviewerJwt = fixture.api.issueToken('vault', 'reviewer');
  });
  beforeEach(() => {
    fixture.podDir = mkdtempSync(join(dir, 'pod-'));
    process.env[SERVICE_ACCOUNT_DIR_ENV] = fixture.podDir;
  });
  afterAll(async () => {
    if (previousPodDir === undefined) delete process.env[SERVICE_ACCOUNT_DIR_ENV];
    else process.env[SERVICE_ACCOUNT_DIR_ENV] = previousPodDir;
    await fixture.api?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return fixture;
}
