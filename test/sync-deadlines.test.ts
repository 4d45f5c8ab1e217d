/**
 * Secret sync when providers do not answer. Every provider endpoint sits behind a proxy that can
 * stall (accept connections, read requests, never answer). A stalled provider becomes an
 * EXTERNAL_SERVICE_ERROR once the provider call deadline passes, its requests cancelled; other
 * destinations and mounts keep syncing meanwhile; an association reads SYNCED only once its
 * provider holds the latest version; when the provider answers again, the retries sync it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PROVIDER_CALL_DEADLINE_MS } from '@svc/sync-model';
import { api, assertingCalls, createTestCa, eventually, initAndUnseal, startTopology, type ApiCall, type Topology, type TopologyKind } from '@svc/testing';
import { startStallingProxy, type StallingProxy } from './emulators/stalling-proxy';
import { startSyncProviders, syncAccounts, type SyncProviders } from './emulators/sync-providers';

const SECRET = `s3cret-${randomBytes(6).toString('hex')}`;
const ACCOUNTS = syncAccounts(SECRET);
const { awsKey: AWS_KEY, githubToken: GITHUB_TOKEN, vercelToken: VERCEL_TOKEN, azureApp: AZURE_APP } = ACCOUNTS;
const GCP_PROJECT = 'deadline-project';
/** A failure is recorded within the deadline, plus the worker's polling and a loaded machine's slack. */
const FAILURE_WITHIN_MS = PROVIDER_CALL_DEADLINE_MS + 5_000;
const SYNC_WITHIN_MS = 15_000;
const NO_ANSWER = `no answer from the provider within ${PROVIDER_CALL_DEADLINE_MS / 1000} s`;

describe.each<TopologyKind>(['all-in-one', 'distributed'])('secret sync with providers that do not answer, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let providers: SyncProviders;
  let proxies: Record<'aws' | 'github' | 'vercel' | 'gcp' | 'vault' | 'directory', StallingProxy>;
  let caDir: string;
  const accessors: Record<string, string> = {};

  const call: ApiCall = (method, where, body, token = root) => api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);

  const setAssociation = async (destination: string, mount: string, secret: string) =>
    (await ok('POST', `sys/sync/destinations/${destination}/associations/set`, { mount, secret_name: secret })).data.associated_secrets[`${accessors[mount]}/${secret}`] as Record<string, unknown>;
  const association = async (destination: string, mount: string, secret: string) =>
    (await ok('GET', `sys/sync/destinations/${destination}/associations`)).data.associated_secrets[`${accessors[mount]}/${secret}`] as { sync_status: string; error?: string };
  const untilStatus = async (destination: string, mount: string, secret: string, status: string, withinMs: number) => {
    try {
      await eventually(async () => (await association(destination, mount, secret)).sync_status === status, withinMs);
    } catch {
      throw new Error(`${destination} ${mount}/${secret} never reached ${status}: ${JSON.stringify(await association(destination, mount, secret))}`);
    }
  };

  /** What each provider holds of kv/app, under the default name templates (steady: its own). */
  const held = {
    'cloud-sm/aws': () => providers.aws.value(`svc/${accessors.kv}/app`),
    'codehost/gh': () => providers.github.secret('acme', 'app', `SVC_${accessors.kv}_APP_V`.toUpperCase()),
    'webhost-project/web': () => providers.vercel.variable('prj_web', `SVC_${accessors.kv}_APP_V`.toUpperCase())?.value,
    'cloudc-sm/gcp': () => providers.gcp.value(GCP_PROJECT, `svc_${accessors.kv}_app`.replace(/[^A-Za-z0-9_-]/g, '_')),
    'cloudb-kv/az': () => providers.azure.value(`svc-${accessors.kv}-app`.replace(/[^A-Za-z0-9-]/g, '-')),
  };
  /** The value each holds of kv/app {v}: the whole secret as JSON, or (codehost, webhost-project) the key. */
  const expected = (destination: string, v: string) => (destination === 'codehost/gh' || destination === 'webhost-project/web' ? v : JSON.stringify({ v }));
  const stalledDestinations = Object.keys(held) as (keyof typeof held)[];

  beforeAll(async () => {
    caDir = mkdtempSync(path.join(tmpdir(), 'svc-sync-deadlines-ca-'));
    const ca = createTestCa(caDir, 'svc sync deadlines test CA');
    providers = await startSyncProviders(ca, ACCOUNTS);
    const { aws, github, vercel, azure, gcp } = providers;
    const [awsProxy, githubProxy, vercelProxy, gcpProxy, vaultProxy, directoryProxy] = await Promise.all(
      [aws.url, github.url, vercel.url, gcp.url, azure.url, azure.url].map((target) => startStallingProxy(target)),
    );
    proxies = { aws: awsProxy, github: githubProxy, vercel: vercelProxy, gcp: gcpProxy, vault: vaultProxy, directory: directoryProxy };
    const endpoints = `provider_endpoints {\n  cloud_sm = "${awsProxy.url}"\n  cloudb_authority = "${directoryProxy.url}"\n  cloudc_sm = "${gcpProxy.url}"\n  codehost = "${githubProxy.url}"\n  webhost = "${vercelProxy.url}"\n}\n`;
    topology = await startTopology(kind, { gatewayConfig: endpoints, serviceConfig: endpoints, services: ['sync'], env: { NODE_EXTRA_CA_CERTS: ca.caCert } });
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
    for (const mount of ['kv', 'kv2']) {
      await ok('POST', `sys/mounts/${mount}`, { type: 'kv', options: { version: '2' } });
      accessors[mount] = (await ok('GET', `sys/mounts/${mount}`)).data.accessor as string;
    }
    const azureApp = { tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: AZURE_APP.secret };
    await ok('POST', 'sys/sync/destinations/cloud-sm/aws', { access_key_id: AWS_KEY.id, secret_access_key: AWS_KEY.secret, region: 'us-east-1' });
    await ok('POST', 'sys/sync/destinations/codehost/gh', { access_token: GITHUB_TOKEN, repository_owner: 'acme', repository_name: 'app' });
    await ok('POST', 'sys/sync/destinations/webhost-project/web', { access_token: VERCEL_TOKEN, project_id: 'prj_web', team_id: 'team_acme', deployment_environments: ['production'] });
    await ok('POST', 'sys/sync/destinations/cloudc-sm/gcp', { credentials: gcp.serviceAccount(GCP_PROJECT) });
    await ok('POST', 'sys/sync/destinations/cloudb-kv/az', { key_vault_uri: vaultProxy.url, ...azureApp });
    // Reaches the vault directly: it keeps working while the vault's proxy stalls.
    await ok('POST', 'sys/sync/destinations/cloudb-kv/steady', { key_vault_uri: azure.url, ...azureApp, secret_name_template: 'steady-{{ .MountBaseName }}-{{ .SecretPath }}' });
    // Reaches the vault directly too, but asks the directory for its first token only once the directory stalls.
    await ok('POST', 'sys/sync/destinations/cloudb-kv/fresh', { key_vault_uri: azure.url, ...azureApp, secret_name_template: 'fresh-{{ .SecretPath }}' });
  }, 120_000);

  afterAll(async () => {
    const logs = topology?.processes.flatMap((p) => p.logs).join('\n') ?? '';
    await topology?.stop();
    await Promise.all([...Object.values(proxies ?? {}).map((proxy) => proxy.close()), providers?.close()]);
    if (caDir) rmSync(caDir, { recursive: true, force: true });
    expect(logs).not.toContain(SECRET);
  });

  test('the destinations listing of a secret without mount or secret_name is a 400 naming the field (GET and HEAD)', async () => {
    await refused('GET', 'sys/sync/associations/destinations?secret_name=app', undefined, 400, /missing required field "mount"/);
    await refused('GET', 'sys/sync/associations/destinations?mount=kv', undefined, 400, /missing required field "secret_name"/);
    await refused('GET', 'sys/sync/associations/destinations', undefined, 400, /missing required field "mount"/);
    // A HEAD answer has no body: the status is what there is to see.
    expect((await call('HEAD', 'sys/sync/associations/destinations')).status).toBe(400);
    expect((await call('HEAD', 'sys/sync/associations/destinations?mount=kv')).status).toBe(400);
  });

  test('a provider that does not answer is an EXTERNAL_SERVICE_ERROR within the deadline, its requests cancelled; other destinations and mounts sync meanwhile; once it answers, the retry syncs it', async () => {
    await ok('POST', 'kv/data/app', { data: { v: '1' } });
    await ok('POST', 'kv2/data/other', { data: { v: '1' } });
    for (const destination of [...stalledDestinations, 'cloudb-kv/steady']) expect({ destination, ...(await setAssociation(destination, 'kv', 'app')) }).toMatchObject({ destination, sync_status: 'SYNCED' });
    expect(await setAssociation('cloudb-kv/steady', 'kv2', 'other')).toMatchObject({ sync_status: 'SYNCED' });

    for (const proxy of Object.values(proxies)) proxy.stall();
    await ok('POST', 'kv/data/app', { data: { v: '2' } });
    // Its first sync needs a token from the directory, which does not answer now.
    const freshSet = ok('POST', 'sys/sync/destinations/cloudb-kv/fresh/associations/set', { mount: 'kv', secret_name: 'app' });
    for (const destination of stalledDestinations) await untilStatus(destination, 'kv', 'app', 'SYNCING', SYNC_WITHIN_MS);

    // While every stalled provider holds a call, a change in another mount, to another destination, lands...
    await ok('POST', 'kv2/data/other', { data: { v: '2' } });
    // ...and reads SYNCED only once the provider holds it.
    const steadyOther = () => providers.azure.value(`steady-kv2-other`);
    const status = (await association('cloudb-kv/steady', 'kv2', 'other')).sync_status;
    if (status === 'SYNCED') expect(steadyOther()).toBe('{"v":"2"}');
    else expect(['PENDING', 'SYNCING']).toContain(status);
    await untilStatus('cloudb-kv/steady', 'kv2', 'other', 'SYNCED', SYNC_WITHIN_MS);
    await untilStatus('cloudb-kv/steady', 'kv', 'app', 'SYNCED', SYNC_WITHIN_MS);
    expect([steadyOther(), providers.azure.value('steady-kv-app')]).toEqual(['{"v":"2"}', '{"v":"2"}']);
    // The stalled calls are still under way: the steady destination did not wait for them.
    for (const destination of stalledDestinations) expect((await association(destination, 'kv', 'app')).sync_status).toBe('SYNCING');

    for (const destination of stalledDestinations) {
      await untilStatus(destination, 'kv', 'app', 'EXTERNAL_SERVICE_ERROR', FAILURE_WITHIN_MS);
      expect(await association(destination, 'kv', 'app')).toMatchObject({ error: expect.stringContaining(NO_ANSWER) });
      expect(held[destination]()).toBe(expected(destination, '1'));
    }
    expect((await freshSet).data.associated_secrets[`${accessors.kv}/app`]).toMatchObject({ sync_status: 'EXTERNAL_SERVICE_ERROR', error: expect.stringContaining(NO_ANSWER) });
    // Cancelled, not abandoned: each client closed the connection its unanswered request was on.
    for (const [name, proxy] of Object.entries(proxies)) {
      await eventually(async () => proxy.cancelledRequests() > 0, SYNC_WITHIN_MS).catch(() => {
        throw new Error(`no request to the ${name} proxy was cancelled`);
      });
    }

    for (const proxy of Object.values(proxies)) proxy.resume();
    for (const destination of stalledDestinations) {
      await untilStatus(destination, 'kv', 'app', 'SYNCED', SYNC_WITHIN_MS);
      expect(held[destination]()).toBe(expected(destination, '2'));
      expect((await association(destination, 'kv', 'app')).error).toBeUndefined();
    }
    await untilStatus('cloudb-kv/fresh', 'kv', 'app', 'SYNCED', SYNC_WITHIN_MS);
    expect(providers.azure.value('fresh-app')).toBe('{"v":"2"}');
  });
});
