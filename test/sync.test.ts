/**
 * Issue 18 end to end: secret sync (sys/sync/*) from KV version 2 to the cloud secrets manager,
 * Key Vault, Secret Manager, the code host's Actions secrets and the web host's environment
 * variables, each against its emulator, in both topologies. The distributed topology runs two sync
 * workers, one of which is killed while changes flow.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { api, assertingCalls, createTestCa, eventually, initAndUnseal, startTopology, type ApiCall, type Topology, type TopologyKind } from '@svc/testing';
import type { SecretsManagerEmulator } from './emulators/aws/secrets-manager';
import type { AzureKeyVaultEmulator } from './emulators/azure-keyvault';
import type { GcpSecretManagerEmulator } from './emulators/gcp-secret-manager';
import type { GithubEmulator } from './emulators/github';
import { startSyncProviders, syncAccounts, type SyncProviders } from './emulators/sync-providers';
import type { VercelEmulator } from './emulators/vercel';

/** A marker in secret values and credentials, so logs can be searched for leaks at the end. */
const SECRET = `s3cret-${randomBytes(6).toString('hex')}`;
const ACCOUNTS = syncAccounts(SECRET);
const { awsKey: AWS_KEY, githubToken: GITHUB_TOKEN, vercelToken: VERCEL_TOKEN, azureApp: AZURE_APP } = ACCOUNTS;
const GCP_PROJECT = 'sync-project';
const SYNC_DEADLINE_MS = 15_000;

interface AssociationView {
  accessor: string;
  secret_name: string;
  sync_status: string;
  updated_at: string;
  error?: string;
  sub_key?: string;
}

describe.each<TopologyKind>(['all-in-one', 'distributed'])('secret sync, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let accessor: string;
  let aws: SecretsManagerEmulator;
  let github: GithubEmulator;
  let vercel: VercelEmulator;
  let azure: AzureKeyVaultEmulator;
  let gcp: GcpSecretManagerEmulator;
  let providers: SyncProviders;
  let caDir: string;

  const call: ApiCall = (method, where, body, token = root) => api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);

  const associations = async (destination: string): Promise<Record<string, AssociationView>> =>
    (await ok('GET', `sys/sync/destinations/${destination}/associations`)).data.associated_secrets as Record<string, AssociationView>;
  const statusOf = async (destination: string, secret: string) => (await associations(destination))[`${accessor}/${secret}`]?.sync_status;
  const setAssociation = async (destination: string, secret: string) =>
    (await ok('POST', `sys/sync/destinations/${destination}/associations/set`, { mount: 'kv', secret_name: secret })).data.associated_secrets as Record<string, AssociationView>;
  const removeAssociation = async (destination: string, secret: string) =>
    (await ok('POST', `sys/sync/destinations/${destination}/associations/remove`, { mount: 'kv', secret_name: secret })).data.associated_secrets as Record<string, AssociationView>;
  const awsName = (secret: string) => `svc/${accessor}/${secret}`;
  const upperName = (secret: string, key: string) => `SVC_${accessor}_${secret}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  const azureName = (secret: string, key = '') => `svc-${accessor}-${secret}${key ? `-${key}` : ''}`.replace(/[^A-Za-z0-9-]/g, '-');
  const gcpName = (secret: string, key = '') => `svc_${accessor}_${secret}${key ? `_${key}` : ''}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const until = (check: () => boolean | undefined | Promise<boolean | undefined>) => eventually(async () => (await check()) === true, SYNC_DEADLINE_MS);
  /** Waits for an association's status; a timeout names the association as it stands. */
  const untilStatus = async (destination: string, secret: string, status: string) => {
    try {
      await until(async () => (await statusOf(destination, secret)) === status);
    } catch {
      throw new Error(`${destination} ${secret} never reached ${status}: ${JSON.stringify((await associations(destination))[`${accessor}/${secret}`])}`);
    }
  };

  beforeAll(async () => {
    // Key Vault is reached over TLS only: its emulator has a certificate of a CA made for this run, which the server processes trust.
    caDir = mkdtempSync(path.join(tmpdir(), 'svc-sync-ca-'));
    const ca = createTestCa(caDir, 'svc sync test CA');
    providers = await startSyncProviders(ca, ACCOUNTS);
    ({ aws, github, vercel, azure, gcp } = providers);
    const endpoints = `provider_endpoints {\n  cloud_sm = "${aws.url}"\n  cloudb_authority = "${azure.url}"\n  cloudc_sm = "${gcp.url}"\n  codehost = "${github.url}"\n  webhost = "${vercel.url}"\n}\n`;
    topology = await startTopology(kind, { gatewayConfig: endpoints, serviceConfig: endpoints, services: ['sync', 'sync'], env: { NODE_EXTRA_CA_CERTS: ca.caCert } });
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
    await ok('POST', 'sys/mounts/kv', { type: 'kv', options: { version: '2' } });
    accessor = (await ok('GET', 'sys/mounts/kv')).data.accessor as string;
    await ok('POST', 'sys/sync/destinations/cloud-sm/aws', { access_key_id: AWS_KEY.id, secret_access_key: AWS_KEY.secret, region: 'us-east-1', custom_tags: { team: 'payments' } });
    await ok('POST', 'sys/sync/destinations/codehost/gh', { access_token: GITHUB_TOKEN, repository_owner: 'acme', repository_name: 'app' });
    await ok('POST', 'sys/sync/destinations/webhost-project/web', { access_token: VERCEL_TOKEN, project_id: 'prj_web', team_id: 'team_acme', deployment_environments: ['preview', 'production'] });
    await ok('POST', 'sys/sync/destinations/cloudb-kv/az', { key_vault_uri: azure.url, tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: AZURE_APP.secret, custom_tags: { team: 'payments' } });
    await ok('POST', 'sys/sync/destinations/cloudc-sm/gcp', { credentials: gcp.serviceAccount(GCP_PROJECT), custom_tags: { team: 'payments' } });
  }, 120_000);

  afterAll(async () => {
    const logs = topology?.processes.flatMap((p) => p.logs).join('\n') ?? '';
    await topology?.stop();
    await providers?.close();
    if (caDir) rmSync(caDir, { recursive: true, force: true });
    // Neither secret values nor provider credentials ever reach a log line.
    expect(logs).not.toContain(SECRET);
  });

  test('destinations: created per type, read with credentials obfuscated, listed across types and per type with totals', async () => {
    const read = await ok('GET', 'sys/sync/destinations/cloud-sm/aws');
    expect(read.data).toEqual({
      name: 'aws',
      type: 'cloud-sm',
      connection_details: { access_key_id: '*****', secret_access_key: '*****', region: 'us-east-1' },
      options: { granularity_level: 'secret-path', secret_name_template: '', custom_tags: { team: 'payments' } },
    });
    expect((await ok('GET', 'sys/sync/destinations/codehost/gh')).data.connection_details).toEqual({ access_token: '*****', repository_owner: 'acme', repository_name: 'app' });
    expect((await ok('GET', 'sys/sync/destinations/webhost-project/web')).data).toMatchObject({
      connection_details: { access_token: '*****', project_id: 'prj_web', team_id: 'team_acme', deployment_environments: ['preview', 'production'] },
      options: { granularity_level: 'secret-key' },
    });
    expect((await ok('GET', 'sys/sync/destinations/cloudb-kv/az')).data).toEqual({
      name: 'az',
      type: 'cloudb-kv',
      connection_details: { key_vault_uri: azure.url, tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: '*****', cloud: 'cloud', subscription_id: '' },
      options: { granularity_level: 'secret-path', secret_name_template: '', custom_tags: { team: 'payments' } },
    });
    expect((await ok('GET', 'sys/sync/destinations/cloudc-sm/gcp')).data.connection_details).toEqual({ credentials: '*****', project_id: '' });
    const all = await ok('LIST', 'sys/sync/destinations');
    expect(all.data).toEqual({
      keys: ['cloud-sm/', 'cloudb-kv/', 'cloudc-sm/', 'codehost/', 'webhost-project/'],
      key_info: { 'cloud-sm/': ['aws'], 'cloudb-kv/': ['az'], 'cloudc-sm/': ['gcp'], 'codehost/': ['gh'], 'webhost-project/': ['web'] },
      total_destinations: 5,
    });
    expect((await ok('LIST', 'sys/sync/destinations/codehost')).data).toEqual({ keys: ['gh'], total_destinations: 1 });
    expect(JSON.stringify(all)).not.toContain(SECRET);
  });

  test('destinations: bad input is a 400 naming the problem; fields naming the external resource cannot change', async () => {
    await refused('POST', 'sys/sync/destinations/codehost/broken', { access_token: 'x', repository_owner: 'acme' }, 400, /missing required field "repository_name"/);
    await refused('POST', 'sys/sync/destinations/webhost-project/broken', { access_token: 'x', project_id: 'p', deployment_environments: ['staging'] }, 400, /"staging" is not one of development, preview, production/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/broken', { granularity: 'per-line' }, 400, /granularity/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/broken', { secret_name_template: '{{ .Nope' }, 400, /invalid secret_name_template/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/aws', { region: 'eu-west-1' }, 400, /field "region" of a cloud-sm destination cannot be changed/);
    await refused('POST', 'sys/sync/destinations/cloudc-sm/broken', { credentials: 'not json' }, 400, /field "credentials" must be a service-account key file \(JSON\)/);
    await refused('POST', 'sys/sync/destinations/cloudc-sm/broken', { credentials: '{"client_email":"a@b"}' }, 400, /"private_key" is missing/);
    await refused('POST', 'sys/sync/destinations/cloudb-kv/broken', { key_vault_uri: 'http://vault.example', tenant_id: 't', client_id: 'c', client_secret: 's' }, 400, /field "key_vault_uri" must be an https URL/);
    await refused('POST', 'sys/sync/destinations/cloudb-kv/az', { key_vault_uri: azure.url, tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: AZURE_APP.secret, cloud: 'china' }, 400, /field "cloud" of a cloudb-kv destination cannot be changed/);
    await refused('LIST', 'sys/sync/destinations/ftp', undefined, 400, /field "type": "ftp" is not one of: cloud-sm, cloudb-kv, cloudc-sm, codehost, webhost-project/);
    await refused('GET', 'sys/sync/destinations/codehost/missing', undefined, 404, /destination codehost\/missing does not exist/);
    expect((await ok('LIST', 'sys/sync/destinations')).data.total_destinations).toBe(5);
  });

  test('cloud-sm: set syncs before answering; KV update, delete, undelete, destroy and metadata delete propagate; remove deletes it, twice is fine', async () => {
    await ok('POST', 'kv/data/db', { data: { password: SECRET, user: 'app' } });
    const set = await setAssociation('cloud-sm/aws', 'db');
    expect(set[`${accessor}/db`]).toMatchObject({ accessor, secret_name: 'db', sync_status: 'SYNCED' });
    expect(JSON.parse(aws.value(awsName('db')) ?? '{}')).toEqual({ password: SECRET, user: 'app' });
    expect(aws.secrets.get(awsName('db'))?.tags).toEqual({ 'svc-managed': 'secrets-service', team: 'payments' });

    await ok('POST', 'kv/data/db', { data: { password: 'rotated', user: 'app' } });
    await until(() => aws.value(awsName('db'))?.includes('rotated'));
    await ok('DELETE', 'kv/data/db');
    await until(() => aws.value(awsName('db')) === undefined);
    await until(async () => (await statusOf('cloud-sm/aws', 'db')) === 'UNSYNCED');
    await ok('POST', 'kv/undelete/db', { versions: [2] });
    await until(() => aws.value(awsName('db'))?.includes('rotated'));
    await until(async () => (await statusOf('cloud-sm/aws', 'db')) === 'SYNCED');
    await ok('POST', 'kv/destroy/db', { versions: [2] });
    await until(() => aws.value(awsName('db')) === undefined);
    await ok('POST', 'kv/data/db', { data: { password: 'third' } });
    await until(() => aws.value(awsName('db')) === '{"password":"third"}');
    await ok('DELETE', 'kv/metadata/db');
    await until(() => aws.value(awsName('db')) === undefined);
    await ok('POST', 'kv/data/db', { data: { password: 'fourth' } });
    await until(() => aws.value(awsName('db')) === '{"password":"fourth"}');

    const removed = await removeAssociation('cloud-sm/aws', 'db');
    expect(removed[`${accessor}/db`]).toMatchObject({ sync_status: 'UNSYNCED' });
    expect(aws.secrets.has(awsName('db'))).toBe(false);
    expect((await removeAssociation('cloud-sm/aws', 'db'))[`${accessor}/db`]).toMatchObject({ sync_status: 'UNSYNCED' });
    // No longer associated: a change goes nowhere.
    await ok('POST', 'kv/data/db', { data: { password: 'fifth' } });
    expect(await associations('cloud-sm/aws')).toEqual({});
  });

  test('codehost: one Actions secret per key, sealed to the repository key; a key dropped from the secret is deleted there', async () => {
    await ok('POST', 'kv/data/ci', { data: { token: SECRET, retries: 3 } });
    const set = await setAssociation('codehost/gh', 'ci');
    expect(set[`${accessor}/ci`]).toMatchObject({ sync_status: 'SYNCED' });
    expect(set[`${accessor}/ci/token`]).toMatchObject({ sub_key: 'token', sync_status: 'SYNCED' });
    expect(github.secret('acme', 'app', upperName('ci', 'token'))).toBe(SECRET);
    expect(github.secret('acme', 'app', upperName('ci', 'retries'))).toBe('3');

    github.rotateKey('acme', 'app');
    await ok('POST', 'kv/data/ci', { data: { token: 'next' } });
    await until(() => github.secret('acme', 'app', upperName('ci', 'token')) === 'next');
    await until(() => github.secret('acme', 'app', upperName('ci', 'retries')) === undefined);

    expect((await removeAssociation('codehost/gh', 'ci'))[`${accessor}/ci`]).toMatchObject({ sync_status: 'UNSYNCED' });
    expect([...(github.repositories.get('acme/app')?.secrets.keys() ?? [])]).toEqual([]);
    expect((await removeAssociation('codehost/gh', 'ci'))[`${accessor}/ci`]).toMatchObject({ sync_status: 'UNSYNCED' });
  });

  test('webhost-project: one encrypted variable per key for the chosen environments, in the team\'s project; remove deletes them', async () => {
    await ok('POST', 'kv/data/web', { data: { api_key: SECRET, flags: { beta: true } } });
    expect((await setAssociation('webhost-project/web', 'web'))[`${accessor}/web`]).toMatchObject({ sync_status: 'SYNCED' });
    expect(vercel.variable('prj_web', upperName('web', 'api_key'))).toMatchObject({ value: SECRET, type: 'encrypted', target: ['preview', 'production'] });
    expect(vercel.variable('prj_web', upperName('web', 'flags'))?.value).toBe('{"beta":true}');
    await ok('POST', 'kv/data/web', { data: { api_key: 'second', flags: { beta: false } } });
    await until(() => vercel.variable('prj_web', upperName('web', 'api_key'))?.value === 'second');
    await removeAssociation('webhost-project/web', 'web');
    expect(vercel.projects.get('prj_web')?.envs).toEqual([]);
  });

  test('cloudb-kv: set syncs over TLS after the vault\'s 401 challenge and a client-credentials token; an update propagates; remove soft-deletes and purges, twice is fine', async () => {
    await ok('POST', 'kv/data/vault', { data: { password: SECRET } });
    expect((await setAssociation('cloudb-kv/az', 'vault'))[`${accessor}/vault`]).toMatchObject({ sync_status: 'SYNCED' });
    expect(JSON.parse(azure.value(azureName('vault')) ?? '{}')).toEqual({ password: SECRET });
    expect(azure.secrets.get(azureName('vault'))?.tags).toEqual({ 'svc-managed': 'secrets-service', team: 'payments' });
    // The first request went without a token; the challenge named the directory the token then came from.
    expect(azure.calls.slice(0, 3)).toEqual([`PUT /secrets/${azureName('vault')}`, `GET /${azure.tenantId}/v2.0/.well-known/openid-configuration`, `POST /${azure.tenantId}/oauth2/v2.0/token`]);

    await ok('POST', 'kv/data/vault', { data: { password: 'rotated' } });
    await until(() => azure.value(azureName('vault')) === '{"password":"rotated"}');
    expect(azure.secrets.get(azureName('vault'))?.versions).toHaveLength(2);
    expect((await removeAssociation('cloudb-kv/az', 'vault'))[`${accessor}/vault`]).toMatchObject({ sync_status: 'UNSYNCED' });
    expect(azure.secrets.has(azureName('vault'))).toBe(false);
    expect(azure.deleted.has(azureName('vault'))).toBe(false);
    expect((await removeAssociation('cloudb-kv/az', 'vault'))[`${accessor}/vault`]).toMatchObject({ sync_status: 'UNSYNCED' });
  });

  test('cloudb-kv: under purge protection a removed secret stays soft-deleted, and associating it again recovers it before writing', async () => {
    azure.purgeProtection = true;
    try {
      await ok('POST', 'kv/data/kept', { data: { v: '1' } });
      await setAssociation('cloudb-kv/az', 'kept');
      await removeAssociation('cloudb-kv/az', 'kept');
      expect(azure.deleted.has(azureName('kept'))).toBe(true);
      await ok('POST', 'kv/data/kept', { data: { v: '2' } });
      expect((await setAssociation('cloudb-kv/az', 'kept'))[`${accessor}/kept`]).toMatchObject({ sync_status: 'SYNCED' });
      expect(azure.value(azureName('kept'))).toBe('{"v":"2"}');
      expect(azure.deleted.has(azureName('kept'))).toBe(false);
    } finally {
      azure.purgeProtection = false;
    }
    await removeAssociation('cloudb-kv/az', 'kept');
    expect(azure.deleted.has(azureName('kept'))).toBe(false);
  });

  test('cloudc-sm: set creates a labelled, replicated secret and adds a version; update and KV delete propagate; remove deletes it, twice is fine', async () => {
    await ok('POST', 'kv/data/gsecret', { data: { password: SECRET } });
    expect((await setAssociation('cloudc-sm/gcp', 'gsecret'))[`${accessor}/gsecret`]).toMatchObject({ sync_status: 'SYNCED' });
    const stored = gcp.secrets.get(`projects/${GCP_PROJECT}/secrets/${gcpName('gsecret')}`);
    expect(stored).toMatchObject({ labels: { 'svc-managed': 'secrets-service', team: 'payments' }, replication: { automatic: {} }, versions: [JSON.stringify({ password: SECRET })] });

    await ok('POST', 'kv/data/gsecret', { data: { password: 'rotated' } });
    await until(() => gcp.value(GCP_PROJECT, gcpName('gsecret')) === '{"password":"rotated"}');
    await ok('DELETE', 'kv/data/gsecret');
    await until(() => !gcp.secrets.has(`projects/${GCP_PROJECT}/secrets/${gcpName('gsecret')}`));
    await untilStatus('cloudc-sm/gcp', 'gsecret', 'UNSYNCED');
    await ok('POST', 'kv/data/gsecret', { data: { password: 'back' } });
    await until(() => gcp.value(GCP_PROJECT, gcpName('gsecret')) === '{"password":"back"}');

    expect((await removeAssociation('cloudc-sm/gcp', 'gsecret'))[`${accessor}/gsecret`]).toMatchObject({ sync_status: 'UNSYNCED' });
    expect(gcp.secrets.has(`projects/${GCP_PROJECT}/secrets/${gcpName('gsecret')}`)).toBe(false);
    expect((await removeAssociation('cloudc-sm/gcp', 'gsecret'))[`${accessor}/gsecret`]).toMatchObject({ sync_status: 'UNSYNCED' });
  });

  test('cloudb-kv and cloudc-sm with secret-key granularity: one provider secret per key; a key dropped from the secret is deleted there', async () => {
    await ok('POST', 'sys/sync/destinations/cloudb-kv/az-keys', { key_vault_uri: azure.url, tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: AZURE_APP.secret, granularity: 'secret-key' });
    await ok('POST', 'sys/sync/destinations/cloudc-sm/gcp-keys', { credentials: gcp.serviceAccount(GCP_PROJECT), granularity: 'secret-key' });
    await ok('POST', 'kv/data/split', { data: { user: 'app', pass: SECRET } });
    for (const destination of ['cloudb-kv/az-keys', 'cloudc-sm/gcp-keys']) {
      expect((await setAssociation(destination, 'split'))[`${accessor}/split/pass`]).toMatchObject({ sub_key: 'pass', sync_status: 'SYNCED' });
    }
    expect([azure.value(azureName('split', 'user')), azure.value(azureName('split', 'pass'))]).toEqual(['app', SECRET]);
    expect([gcp.value(GCP_PROJECT, gcpName('split', 'user')), gcp.value(GCP_PROJECT, gcpName('split', 'pass'))]).toEqual(['app', SECRET]);

    await ok('POST', 'kv/data/split', { data: { pass: 'next' } });
    await until(() => azure.value(azureName('split', 'pass')) === 'next' && azure.value(azureName('split', 'user')) === undefined);
    await until(() => gcp.value(GCP_PROJECT, gcpName('split', 'pass')) === 'next' && gcp.value(GCP_PROJECT, gcpName('split', 'user')) === undefined);
    for (const destination of ['cloudb-kv/az-keys', 'cloudc-sm/gcp-keys']) {
      await removeAssociation(destination, 'split');
      await ok('DELETE', `sys/sync/destinations/${destination}`);
    }
    expect(azure.secrets.has(azureName('split', 'pass'))).toBe(false);
    expect(gcp.secrets.has(`projects/${GCP_PROJECT}/secrets/${gcpName('split', 'pass')}`)).toBe(false);
  });

  test('cloudb-kv and cloudc-sm: a provider 5xx is an EXTERNAL_SERVICE_ERROR, retried until SYNCED; refused credentials are a CLIENT_SIDE_ERROR without the credential', async () => {
    await ok('POST', 'kv/data/cloudy', { data: { v: '1' } });
    azure.failNext('set-secret', 503, 'ServiceUnavailable', 2);
    gcp.failNext('add-version', 503, 2);
    for (const [destination, cause] of [['cloudb-kv/az', /provider answered 503/], ['cloudc-sm/gcp', /provider answered 503/]] as const) {
      expect((await setAssociation(destination, 'cloudy'))[`${accessor}/cloudy`]).toMatchObject({ sync_status: 'EXTERNAL_SERVICE_ERROR', error: expect.stringMatching(cause) });
    }
    await untilStatus('cloudb-kv/az', 'cloudy', 'SYNCED');
    await untilStatus('cloudc-sm/gcp', 'cloudy', 'SYNCED');
    expect([azure.value(azureName('cloudy')), gcp.value(GCP_PROJECT, gcpName('cloudy'))]).toEqual(['{"v":"1"}', '{"v":"1"}']);
    await removeAssociation('cloudb-kv/az', 'cloudy');
    await removeAssociation('cloudc-sm/gcp', 'cloudy');

    await ok('POST', 'sys/sync/destinations/cloudb-kv/az-wrong', { key_vault_uri: azure.url, tenant_id: azure.tenantId, client_id: AZURE_APP.id, client_secret: `wrong-${SECRET}` });
    // A service account of another project: its JWT verifies, the project refuses it.
    await ok('POST', 'sys/sync/destinations/cloudc-sm/gcp-wrong', { credentials: gcp.serviceAccount('other-project'), project_id: GCP_PROJECT });
    const azureRefused = (await setAssociation('cloudb-kv/az-wrong', 'cloudy'))[`${accessor}/cloudy`];
    expect(azureRefused).toMatchObject({ sync_status: 'CLIENT_SIDE_ERROR', error: expect.stringContaining('AADSTS7000215') });
    const gcpRefused = (await setAssociation('cloudc-sm/gcp-wrong', 'cloudy'))[`${accessor}/cloudy`];
    expect(gcpRefused).toMatchObject({ sync_status: 'CLIENT_SIDE_ERROR', error: expect.stringContaining('provider answered 403') });
    expect(JSON.stringify([azureRefused, gcpRefused])).not.toContain(SECRET);
    for (const destination of ['cloudb-kv/az-wrong', 'cloudc-sm/gcp-wrong']) {
      await removeAssociation(destination, 'cloudy');
      await ok('DELETE', `sys/sync/destinations/${destination}`);
    }
  });

  test('a provider 5xx is an EXTERNAL_SERVICE_ERROR with its cause, retried with backoff until it is SYNCED', async () => {
    await ok('POST', 'kv/data/flaky', { data: { v: '1' } });
    aws.failNext('CreateSecret', { status: 503, type: 'ServiceUnavailableException', message: 'try later' }, 2);
    const set = await setAssociation('cloud-sm/aws', 'flaky');
    expect(set[`${accessor}/flaky`]).toMatchObject({ sync_status: 'EXTERNAL_SERVICE_ERROR', error: expect.stringContaining('provider answered 503: ServiceUnavailableException: try later') });
    await until(async () => (await statusOf('cloud-sm/aws', 'flaky')) === 'SYNCED');
    expect(aws.value(awsName('flaky'))).toBe('{"v":"1"}');
    expect((await associations('cloud-sm/aws'))[`${accessor}/flaky`].error).toBeUndefined();
    await removeAssociation('cloud-sm/aws', 'flaky');
  });

  test('bad provider credentials are a CLIENT_SIDE_ERROR, not retried; set after fixing them syncs', async () => {
    await ok('POST', 'sys/sync/destinations/cloud-sm/wrong', { access_key_id: AWS_KEY.id, secret_access_key: 'not-the-secret', region: 'us-east-1' });
    await ok('POST', 'kv/data/creds', { data: { v: 'x' } });
    const set = await setAssociation('cloud-sm/wrong', 'creds');
    expect(set[`${accessor}/creds`]).toMatchObject({ sync_status: 'CLIENT_SIDE_ERROR', error: expect.stringContaining('InvalidSignatureException') });
    expect(JSON.stringify(set)).not.toContain(SECRET);
    await ok('POST', 'sys/sync/destinations/cloud-sm/wrong', { access_key_id: AWS_KEY.id, secret_access_key: AWS_KEY.secret, region: 'us-east-1' });
    expect((await setAssociation('cloud-sm/wrong', 'creds'))[`${accessor}/creds`]).toMatchObject({ sync_status: 'SYNCED' });
    await removeAssociation('cloud-sm/wrong', 'creds');
    await ok('DELETE', 'sys/sync/destinations/cloud-sm/wrong');
  });

  test('set needs read permission on the secret (403), a KV version 2 mount and an existing secret (400)', async () => {
    await ok('POST', 'kv/data/private', { data: { v: 'p' } });
    await ok('PUT', 'sys/policies/acl/sync-only', { policy: 'path "sys/sync/*" { capabilities = ["create", "read", "update", "delete", "list"] }\npath "kv/data/public" { capabilities = ["read"] }' });
    const limited = (await ok('POST', 'auth/token/create', { policies: ['sync-only'] })).auth.client_token as string;
    const denied = await call('POST', 'sys/sync/destinations/cloud-sm/aws/associations/set', { mount: 'kv', secret_name: 'private' }, limited);
    expect(denied.status).toBe(403);
    expect(denied.body.errors).toEqual([`permission denied to read the content of the secret private in mount kv/`]);
    await ok('POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
    await refused('POST', 'sys/sync/destinations/cloud-sm/aws/associations/set', { mount: 'kv1', secret_name: 'x' }, 400, /not a KV version 2 mount/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/aws/associations/set', { mount: 'kv', secret_name: 'absent' }, 400, /Secret not found/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/aws/associations/set', { mount: 'kv' }, 400, /missing required field "secret_name"/);
    await refused('POST', 'sys/sync/destinations/cloud-sm/nowhere/associations/set', { mount: 'kv', secret_name: 'private' }, 404, /does not exist/);
    expect(await associations('cloud-sm/aws')).toEqual({});
  });

  test('a destination that manages associations cannot be deleted; the association views list what is linked', async () => {
    await ok('POST', 'kv/data/team/shared', { data: { v: 's' } });
    await setAssociation('cloud-sm/aws', 'team/shared');
    await setAssociation('codehost/gh', 'team/shared');
    await refused('DELETE', 'sys/sync/destinations/cloud-sm/aws', undefined, 400, /still manages 1 association/);

    const listed = await ok('LIST', 'sys/sync/associations');
    expect(listed.data).toMatchObject({ keys: ['kv/team/shared'], total_associations: 2, total_secrets: 1 });
    expect(listed.data.key_info['kv/team/shared']).toEqual(expect.arrayContaining([expect.objectContaining({ mount: 'kv/', secret_path: 'team/shared' })]));
    const expected = {
      'cloud-sm/aws': expect.objectContaining({ type: 'cloud-sm', name: 'aws', sync_status: 'SYNCED' }),
      'codehost/gh': expect.objectContaining({ type: 'codehost', name: 'gh', sync_status: 'SYNCED' }),
    };
    expect((await ok('GET', 'sys/sync/associations/kv/team/shared')).data.associated_destinations).toEqual(expected);
    expect((await ok('GET', 'sys/sync/associations/destinations?mount=kv&secret_name=team/shared')).data.associated_destinations).toEqual(expected);

    await removeAssociation('cloud-sm/aws', 'team/shared');
    await removeAssociation('codehost/gh', 'team/shared');
    await ok('POST', 'sys/sync/destinations/cloud-sm/gone', { region: 'us-east-1' });
    await ok('DELETE', 'sys/sync/destinations/cloud-sm/gone');
    await refused('GET', 'sys/sync/destinations/cloud-sm/gone', undefined, 404, /does not exist/);
  });

  if (kind === 'distributed') {
    test('two workers, one killed while changes flow: every change arrives, in order, the last one wins', async () => {
      await ok('POST', 'kv/data/counter', { data: { n: 0 } });
      await setAssociation('cloud-sm/aws', 'counter');
      const writes = 60;
      for (let n = 1; n <= writes; n++) {
        await ok('POST', 'kv/data/counter', { data: { n } });
        if (n === writes / 2) topology.processes.find((p) => p.name === 'sync')?.child.kill('SIGKILL');
      }
      await until(() => aws.value(awsName('counter')) === JSON.stringify({ n: writes }));
      const seen = (aws.secrets.get(awsName('counter'))?.versions ?? []).map((value) => (JSON.parse(value) as { n: number }).n);
      // Coalesced (latest value wins) but never out of order, and never a value twice in a row
      // from two workers syncing the same change.
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen[seen.length - 1]).toBe(writes);
      await removeAssociation('cloud-sm/aws', 'counter');
    });
  }
});
