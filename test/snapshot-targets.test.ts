/**
 * Issue 16, automated snapshots to the cloud targets, through the providers' SDKs against
 * emulators that check credentials as the providers do: `cloud-objstore` (s3rver behind the SigV4
 * check), `cloudb-blob` (azurite: Shared Key; over TLS, an Azure AD token from the sign-in
 * directory) and `cloudc-bucket` (our Cloud Storage emulator, service-account JWTs). In both
 * topologies (distributed: the scheduler in the snapshot service's own process). Every target runs
 * at once, beside configurations with wrong credentials, which fail on their own; configurations
 * without credentials sign in with each SDK's credential chain from the service's environment; the
 * snapshots a target keeps are the newest `retain`, and they restore.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { TARGET_CALL_TIMEOUT_MS } from '@svc/snapshot';
import { api, assertingCalls, createTestCa, eventually, initAndUnseal, startSilentListener, startTopology, type Topology, type TopologyKind } from '@svc/testing';
import { startS3Emulator, type S3Emulator } from './emulators/aws/s3';
import { STORAGE_RESOURCE, startAzurite, type AzuriteEmulator } from './emulators/azure/azurite';
import { startAzureDirectory, type AzureDirectoryServer } from './emulators/azure/directory';
import { startGcsEmulator, type GcsEmulator } from './emulators/gcp/storage';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

const ZERO_TIME = '0001-01-01T00:00:00Z';
const SNAPSHOT = (prefix: string) => new RegExp(`^${prefix}-\\d{19}\\.snap$`);
/** The app registration the snapshot service signs in to Azure AD as, from its environment. */
const AZURE_APP = { id: '5e1f0c3a-0000-4000-8000-0000snapshot', secret: `app-secret-${randomBytes(12).toString('hex')}` };

describe.each<TopologyKind>(['all-in-one', 'distributed'])('automated snapshots to cloud targets, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  /** The run's CA (which the emulators' TLS certificates chain to) and the credential files. */
  let dir: string;
  let s3: S3Emulator;
  let s3Client: S3Client;
  let s3Keys: { accessKeyId: string; secretAccessKey: string };
  let azurite: AzuriteEmulator;
  /** Azurite over TLS, which also takes Azure AD tokens, and the directory that issues them. */
  let tokenAzurite: AzuriteEmulator;
  let directory: AzureDirectoryServer;
  let container: ContainerClient;
  let tokenContainer: ContainerClient;
  let gcs: GcsEmulator;
  let gcsKey: string;
  /** What the snapshot service's credential chains find in its environment. */
  let chainS3Keys: { accessKeyId: string; secretAccessKey: string };
  let applicationCredentials: string;
  let chainGcsKey: string;
  /** The fields every configuration of a type shares: where the emulator is. */
  let s3Base: Body;
  let blobBase: Body;
  let gcsBase: Body;
  const call = (method: string, where: string, body?: unknown, token = root) => api<Body>(url, method, `/v1/${where}`, { body, token });
  const { ok, refused } = assertingCalls(call);
  const config = (name: string) => `sys/storage/raft/snapshot-auto/config/${name}`;
  const status = async (name: string) => (await ok('GET', `sys/storage/raft/snapshot-auto/status/${name}`)).data;
  const hostOf = (base: string) => new URL(base).host;

  /** The latest snapshot each configuration wrote (its status URL), restored by the last test. */
  const latest: Record<string, string> = {};
  /** Successful attempts seen per configuration (by start time). */
  const successes = new Map<string, Set<string>>();
  const succeededTimes = async (name: string, times: number) => {
    const current = await status(name);
    const seen = successes.get(name) ?? new Set<string>();
    successes.set(name, seen);
    if (current.last_snapshot_start !== ZERO_TIME && current.last_snapshot_error === '') seen.add(current.last_snapshot_start as string);
    return seen.size >= times;
  };
  /** Runs stop (the next is an hour away) and the one under way, if any, finishes with its retention. */
  const stopRuns = async (names: string[]) => {
    for (const name of names) await ok('POST', config(name), { interval: '1h' });
    await eventually(async () => (await Promise.all(names.map(async (name) => ((current) => current.snapshot_start === current.last_snapshot_start)(await status(name))))).every(Boolean), 60_000, 200);
  };
  /** What each emulator holds under a prefix. */
  const s3Names = async (prefix: string) => ((await s3Client.send(new ListObjectsV2Command({ Bucket: 'backups', Prefix: prefix }))).Contents ?? []).map((o) => o.Key!);
  const blobNames = async (prefix: string, from = container) => {
    const names: string[] = [];
    for await (const blob of from.listBlobsFlat({ prefix })) names.push(blob.name);
    return names;
  };
  const gcsNames = (prefix: string) => [...gcs.buckets.get('vault-backups')!.keys()].filter((name) => name.startsWith(prefix));
  /** A snapshot, downloaded from the emulator its status URL names. */
  const download = async (snapshotUrl: string): Promise<Buffer> => {
    if (snapshotUrl.startsWith('s3://backups/')) {
      const object = await s3Client.send(new GetObjectCommand({ Bucket: 'backups', Key: snapshotUrl.slice('s3://backups/'.length) }));
      return Buffer.from(await object.Body!.transformToByteArray());
    }
    if (snapshotUrl.startsWith('gs://vault-backups/')) return gcs.buckets.get('vault-backups')!.get(snapshotUrl.slice('gs://vault-backups/'.length))!.data;
    const from = snapshotUrl.startsWith(`${tokenContainer.url}/`) ? tokenContainer : container;
    return from.getBlobClient(snapshotUrl.slice(`${from.url}/`.length)).downloadToBuffer();
  };
  const restores = async (archive: Buffer) => {
    const restored = await api(url, 'POST', '/v1/sys/storage/raft/snapshot', { rawBody: archive, token: root });
    expect(restored.status).toBe(204);
  };

  beforeAll(async () => {
    // Azure's SDKs send tokens and client secrets over TLS only: azurite and the directory serving them have certificates of a CA made for this run.
    dir = mkdtempSync(path.join(tmpdir(), 'svc-snapshot-targets-'));
    const ca = createTestCa(path.join(dir, 'ca'), 'svc snapshot targets test CA');
    const tls = ca.issue('providers', ['127.0.0.1']);
    [s3, azurite, tokenAzurite, directory, gcs] = await Promise.all([startS3Emulator('eu-central-1'), startAzurite(), startAzurite({ tls }), startAzureDirectory(tls, [STORAGE_RESOURCE]), startGcsEmulator()]);

    // The credential chains' sources: a shared credentials file's profile (AWS), an app
    // registration's client secret (Azure), a service-account key file (Google).
    chainS3Keys = s3.createCredentials();
    const sharedCredentials = path.join(dir, 'aws-credentials');
    writeFileSync(sharedCredentials, `[snapshots]\naws_access_key_id = ${chainS3Keys.accessKeyId}\naws_secret_access_key = ${chainS3Keys.secretAccessKey}\n`, { mode: 0o600 });
    directory.apps.set(AZURE_APP.id, AZURE_APP.secret);
    chainGcsKey = JSON.stringify(gcs.createServiceAccount('default-credentials'));
    applicationCredentials = path.join(dir, 'application-credentials.json');
    writeFileSync(applicationCredentials, chainGcsKey, { mode: 0o600 });
    const env = {
      NODE_EXTRA_CA_CERTS: ca.caCert,
      AWS_SHARED_CREDENTIALS_FILE: sharedCredentials,
      AWS_PROFILE: 'snapshots',
      AZURE_TENANT_ID: directory.tenantId,
      AZURE_CLIENT_ID: AZURE_APP.id,
      AZURE_CLIENT_SECRET: AZURE_APP.secret,
      AZURE_AUTHORITY_HOST: directory.url,
      GOOGLE_APPLICATION_CREDENTIALS: applicationCredentials,
    };
    topology = await startTopology(kind, { services: ['snapshot'], env });
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));

    s3Keys = s3.createCredentials();
    s3Client = new S3Client({ region: s3.region, endpoint: s3.url, forcePathStyle: true, credentials: s3Keys });
    await s3Client.send(new CreateBucketCommand({ Bucket: 'backups' }));
    container = new BlobServiceClient(azurite.url, new StorageSharedKeyCredential(azurite.account, azurite.key)).getContainerClient('snapshots');
    // The storage client hands `tlsOptions` on to its HTTP pipeline: this process trusts the run's CA that way.
    const trustingTestCa: StoragePipelineOptions & { tlsOptions: { ca: string } } = { tlsOptions: { ca: readFileSync(ca.caCert, 'utf8') } };
    tokenContainer = new BlobServiceClient(tokenAzurite.url, new StorageSharedKeyCredential(tokenAzurite.account, tokenAzurite.key), trustingTestCa).getContainerClient('snapshots');
    await Promise.all([container.create(), tokenContainer.create()]);
    gcs.buckets.set('vault-backups', new Map());
    // Two objects a page: retention reads every page of the listing.
    gcs.pageSize = 2;
    gcsKey = JSON.stringify(gcs.createServiceAccount('snapshotter'));

    s3Base = { interval: '1s', storage_type: 'cloud-objstore', cloud_objstore_bucket: 'backups', cloud_objstore_region: s3.region, cloud_objstore_endpoint: hostOf(s3.url), cloud_objstore_disable_tls: true, cloud_objstore_force_path_style: true };
    blobBase = { interval: '1s', storage_type: 'cloudb-blob', cloudb_container_name: 'snapshots', cloudb_account_name: azurite.account, cloudb_endpoint: azurite.url };
    gcsBase = { interval: '1s', storage_type: 'cloudc-bucket', cloudc_bucket: 'vault-backups', cloudc_endpoint: hostOf(gcs.url), cloudc_disable_tls: true };
  }, 300_000);

  afterAll(async () => {
    s3Client?.destroy();
    await Promise.all([topology?.stop(), s3?.close(), azurite?.close(), tokenAzurite?.close(), directory?.close(), gcs?.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a cloud configuration without its required fields, or with a malformed one, is refused with a 400 naming the field', async () => {
    const s3Config = { interval: 60, storage_type: 'cloud-objstore', path_prefix: 'p', cloud_objstore_region: 'eu-central-1' };
    await refused('POST', config('bad'), s3Config, 400, /missing required field "cloud_objstore_bucket" for storage_type cloud-objstore/);
    await refused('POST', config('bad'), { ...s3Config, cloud_objstore_bucket: 'b', cloud_access_key_id: 'AKIA' }, 400, /cloud_access_key_id and cloud_secret_access_key are given together/);
    await refused('POST', config('bad'), { ...s3Config, cloud_objstore_bucket: 'b', cloud_objstore_kms_key: 'k' }, 400, /cloud_objstore_kms_key needs cloud_objstore_enable_kms/);
    await refused('POST', config('bad'), { ...s3Config, cloud_objstore_bucket: 'b', cloud_objstore_endpoint: 'ftp://x' }, 400, /cloud_objstore_endpoint must be an http or https URL/);
    const blob = { interval: 60, storage_type: 'cloudb-blob', path_prefix: 'p/', cloudb_account_name: 'acct' };
    await refused('POST', config('bad'), blob, 400, /missing required field "cloudb_container_name" for storage_type cloudb-blob/);
    await refused('POST', config('bad'), { ...blob, cloudb_container_name: 'c', cloudb_account_name: undefined }, 400, /missing required field "cloudb_account_name"/);
    await refused('POST', config('bad'), { ...blob, cloudb_container_name: 'c', cloudb_endpoint: 'not a url' }, 400, /cloudb_endpoint must be an http or https URL/);
    const bucket = { interval: 60, storage_type: 'cloudc-bucket', path_prefix: 'p/' };
    await refused('POST', config('bad'), bucket, 400, /missing required field "cloudc_bucket" for storage_type cloudc-bucket/);
    await refused('POST', config('bad'), { ...bucket, path_prefix: 'p', cloudc_bucket: 'b' }, 400, /path_prefix must end in "\/" for storage_type cloudc-bucket/);
    await refused('POST', config('bad'), { ...bucket, cloudc_bucket: 'b', cloudc_service_account_key: 'not json' }, 400, /cloudc_service_account_key is not valid JSON/);
    expect((await call('GET', config('bad'))).status).toBe(404);
  });

  test('every target at once, each with a failing twin: snapshots every interval, the newest `retain` kept, provider URLs in status, credentials never read back', async () => {
    const wrongGcsKey = JSON.stringify({ ...JSON.parse(gcsKey), private_key: gcs.createServiceAccount('impostor').private_key });
    const configs: Record<string, Body> = {
      s3: { ...s3Base, retain: 2, path_prefix: 'nightly', file_prefix: 'app', cloud_access_key_id: s3Keys.accessKeyId, cloud_secret_access_key: s3Keys.secretAccessKey, cloud_objstore_server_side_encryption: true },
      's3-kms': { ...s3Base, path_prefix: 'kms/', file_prefix: 'app', cloud_access_key_id: s3Keys.accessKeyId, cloud_secret_access_key: s3Keys.secretAccessKey, cloud_objstore_enable_kms: true, cloud_objstore_kms_key: 'alias/backups' },
      's3-wrong-secret': { ...s3Base, path_prefix: 'wrong-secret', cloud_access_key_id: s3Keys.accessKeyId, cloud_secret_access_key: 'not-the-secret' },
      's3-unknown-key': { ...s3Base, path_prefix: 'unknown-key', cloud_access_key_id: 'AKIAUNKNOWN', cloud_secret_access_key: s3Keys.secretAccessKey },
      blob: { ...blobBase, retain: 2, path_prefix: 'cluster/', file_prefix: 'app', cloudb_account_key: azurite.key },
      'blob-wrong-key': { ...blobBase, path_prefix: 'wrong/', cloudb_account_key: Buffer.alloc(64, 1).toString('base64') },
      gcs: { ...gcsBase, retain: 3, path_prefix: 'cluster/', file_prefix: 'app', cloudc_service_account_key: gcsKey },
      'gcs-wrong-key': { ...gcsBase, path_prefix: 'wrong/', cloudc_service_account_key: wrongGcsKey },
    };
    // Objects beside the snapshots that retention must leave alone.
    await s3Client.send(new PutObjectCommand({ Bucket: 'backups', Key: 'nightly/app-notes.txt', Body: 'keep me' }));
    await container.getBlockBlobClient('cluster/readme.txt').upload('keep me', 7);
    for (const [name, body] of Object.entries(configs)) await ok('POST', config(name), body);

    const good = ['s3', 's3-kms', 'blob', 'gcs'];
    const failing = { 's3-wrong-secret': /SignatureDoesNotMatch|signature we calculated does not match/, 's3-unknown-key': /Access Key Id you provided does not exist/, 'blob-wrong-key': /Server failed to authenticate the request/, 'gcs-wrong-key': /Invalid Credentials/ };
    await eventually(async () => {
      const done = await Promise.all([...good.map((name) => succeededTimes(name, name === 's3-kms' ? 1 : 4)), ...Object.keys(failing).map(async (name) => (await status(name)).last_snapshot_error !== '')]);
      return done.every(Boolean);
    }, 90_000, 200);

    for (const [name, error] of Object.entries(failing)) {
      const current = await status(name);
      expect(current.last_snapshot_error).toMatch(error);
      for (const body of Object.values(configs)) {
        for (const secret of [body.cloud_secret_access_key, body.cloudb_account_key, body.cloudc_service_account_key]) if (secret) expect(current.last_snapshot_error).not.toContain(secret);
      }
    }
    for (const [name, body] of Object.entries(configs)) {
      const shown = (await ok('GET', config(name))).data;
      expect(shown.interval).toBe(1);
      for (const field of ['cloud_secret_access_key', 'cloud_session_token', 'cloudb_account_key', 'cloudc_service_account_key']) expect(shown).not.toHaveProperty(field);
      expect(shown).toMatchObject({ storage_type: body.storage_type, path_prefix: body.path_prefix });
    }

    await stopRuns(Object.keys(configs));
    await eventually(async () => (await s3Names('nightly/app-')).filter((key) => key.endsWith('.snap')).length === 2 && (await blobNames('cluster/app-')).length === 2 && gcsNames('cluster/app-').length === 3, 60_000, 200);

    // S3: the newest two under nightly/ (path_prefix without its '/'), written with SSE as configured.
    const nightly = (await s3Names('nightly/')).filter((key) => key !== 'nightly/app-notes.txt');
    expect(nightly).toHaveLength(2);
    for (const key of nightly) expect(key.slice('nightly/'.length)).toMatch(SNAPSHOT('app'));
    expect(await s3Names('nightly/app-notes.txt')).toEqual(['nightly/app-notes.txt']);
    expect(await s3Names('wrong-secret')).toEqual([]);
    expect(await s3Names('unknown-key')).toEqual([]);
    const s3Status = await status('s3');
    expect(s3Status.last_snapshot_url).toMatch(/^s3:\/\/backups\/nightly\/app-\d{19}\.snap$/);
    expect(s3Status.snapshot_url).toMatch(/^s3:\/\/backups\/nightly\/app-\d{19}\.snap$/);
    expect(s3.calls).toContainEqual(expect.stringMatching(/^PUT \/backups\/nightly\/app-\d{19}\.snap ok sse=AES256$/));
    expect(s3.calls).toContainEqual(expect.stringMatching(/^PUT \/backups\/kms\/app-\d{19}\.snap ok sse=aws:kms:alias\/backups$/));

    // Blob: the newest two under cluster/, the URL the account's blob URL.
    const cluster = await blobNames('cluster/');
    expect(cluster.filter((name) => name !== 'cluster/readme.txt')).toHaveLength(2);
    expect(cluster).toContain('cluster/readme.txt');
    expect(await blobNames('wrong/')).toEqual([]);
    expect((await status('blob')).last_snapshot_url).toMatch(new RegExp(`^${azurite.url}/snapshots/cluster/app-\\d{19}\\.snap$`));

    // Cloud Storage: the newest three, found across listing pages of two.
    expect(gcsNames('cluster/')).toHaveLength(3);
    expect(gcsNames('wrong/')).toEqual([]);
    expect((await status('gcs')).last_snapshot_url).toMatch(/^gs:\/\/vault-backups\/cluster\/app-\d{19}\.snap$/);

    // What is kept includes the latest snapshot.
    for (const name of ['s3', 'blob', 'gcs']) latest[name] = (await status(name)).last_snapshot_url as string;
    expect(nightly).toContain(latest.s3.slice('s3://backups/'.length));
    expect(cluster).toContain(latest.blob.slice(`${container.url}/`.length));
    expect(gcsNames('cluster/')).toContain(latest.gcs.slice('gs://vault-backups/'.length));
    for (const name of Object.keys(configs)) await ok('DELETE', config(name));
  });

  test('without credentials in the configuration, each target signs in through its SDK\'s credential chain from the service\'s environment; a refused sign-in is its error in status', async () => {
    const configs: Record<string, Body> = {
      's3-chain': { ...s3Base, retain: 2, path_prefix: 'chain/', file_prefix: 'chain' },
      'blob-chain': { ...blobBase, retain: 2, path_prefix: 'chain/', file_prefix: 'chain', cloudb_account_name: tokenAzurite.account, cloudb_endpoint: tokenAzurite.url },
      'gcs-chain': { ...gcsBase, retain: 2, path_prefix: 'chain/', file_prefix: 'chain' },
    };
    for (const [name, body] of Object.entries(configs)) await ok('POST', config(name), body);
    await eventually(async () => (await Promise.all(Object.keys(configs).map((name) => succeededTimes(name, 3)))).every(Boolean), 90_000, 200);

    // Each signed in as its chain found: the profile's key, the app registration, the key file's account.
    expect(s3.calls).toContainEqual(expect.stringMatching(/^PUT \/backups\/chain\/chain-\d{19}\.snap ok$/));
    expect(directory.calls).toContain(`POST /${directory.tenantId}/oauth2/v2.0/token`);
    await stopRuns(Object.keys(configs));
    const keptNames = async () => ({ 's3-chain': (await s3Names('chain/')).sort(), 'blob-chain': (await blobNames('chain/', tokenContainer)).sort(), 'gcs-chain': gcsNames('chain/').sort() });
    const kept = await keptNames();
    for (const [name, names] of Object.entries(kept)) {
      expect(names).toHaveLength(2);
      for (const key of names) expect(key.slice('chain/'.length)).toMatch(SNAPSHOT('chain'));
      latest[name] = (await status(name)).last_snapshot_url as string;
    }
    expect(latest['s3-chain']).toBe(`s3://backups/${kept['s3-chain'].at(-1)}`);
    expect(latest['blob-chain']).toBe(`${tokenContainer.url}/${kept['blob-chain'].at(-1)}`);
    expect(latest['gcs-chain']).toBe(`gs://vault-backups/${kept['gcs-chain'].at(-1)}`);

    // Sign-ins the providers refuse from now on: the key deactivated, the app's secret rotated,
    // the key file replaced by one of an account Google does not know.
    s3.credentials.delete(chainS3Keys.accessKeyId);
    directory.apps.set(AZURE_APP.id, `rotated-${randomBytes(8).toString('hex')}`);
    const stranger = JSON.parse(chainGcsKey) as Body;
    writeFileSync(applicationCredentials, JSON.stringify({ ...stranger, private_key_id: randomBytes(20).toString('hex'), client_email: 'stranger@elsewhere.iam.gserviceaccount.com' }));
    for (const name of Object.keys(configs)) await ok('POST', config(name), { interval: '1s' });
    const refusals = { 's3-chain': /Access Key Id you provided does not exist/, 'blob-chain': /AADSTS7000215: Invalid client secret provided/, 'gcs-chain': /Invalid Credentials: unknown key id/ };
    await eventually(async () => (await Promise.all(Object.keys(refusals).map(async (name) => (await status(name)).last_snapshot_error !== ''))).every(Boolean), 60_000, 200);
    await stopRuns(Object.keys(configs));
    const secrets = [chainS3Keys.secretAccessKey, AZURE_APP.secret, stranger.private_key as string];
    for (const [name, error] of Object.entries(refusals)) {
      const current = await status(name);
      expect(current.last_snapshot_error).toMatch(error);
      for (const secret of secrets) expect(current.last_snapshot_error).not.toContain(secret);
    }
    const logs = topology.processes.flatMap((process) => process.logs).join('\n');
    expect(logs).toMatch(/automated snapshot failed/);
    for (const secret of secrets) expect(logs).not.toContain(secret);
    // Nothing was written or deleted without a sign-in.
    expect(await keptNames()).toEqual(kept);
    for (const name of Object.keys(configs)) await ok('DELETE', config(name));
  });

  test('targets that accept and never answer: each run records its failure within the deadline, while another configuration keeps its schedule', async () => {
    const silent = await startSilentListener();
    const s3Credentials = { cloud_access_key_id: s3Keys.accessKeyId, cloud_secret_access_key: s3Keys.secretAccessKey };
    const hung: Record<string, Body> = {
      's3-silent': { ...s3Base, ...s3Credentials, interval: '1h', path_prefix: 'silent/', cloud_objstore_endpoint: hostOf(silent.url) },
      'blob-silent': { ...blobBase, interval: '1h', path_prefix: 'silent/', cloudb_account_key: azurite.key, cloudb_endpoint: `${silent.url}/${azurite.account}` },
      'gcs-silent': { ...gcsBase, interval: '1h', path_prefix: 'silent/', cloudc_service_account_key: gcsKey, cloudc_endpoint: hostOf(silent.url) },
    };
    try {
      const started = Date.now();
      for (const [name, body] of Object.entries(hung)) await ok('POST', config(name), body);
      await ok('POST', config('s3-beside'), { ...s3Base, ...s3Credentials, path_prefix: 'beside/' });
      const failed = async () => (await Promise.all(Object.keys(hung).map(async (name) => (await status(name)).last_snapshot_error !== ''))).every(Boolean);
      // One call each, then its failure: with room for a loaded machine, well short of a hang.
      await eventually(failed, 3 * TARGET_CALL_TIMEOUT_MS - (Date.now() - started), 200);
      for (const name of Object.keys(hung)) {
        const current = await status(name);
        expect([name, current.last_snapshot_error]).toEqual([name, expect.stringMatching(/no answer within \d+ s|timeout/i)]);
        expect(current.last_snapshot_error).not.toContain(s3Keys.secretAccessKey);
      }
      // The silent targets held only their own runs.
      await eventually(() => succeededTimes('s3-beside', 3), 30_000, 200);
      expect(silent.accepted()).toBeGreaterThanOrEqual(3);
    } finally {
      for (const name of [...Object.keys(hung), 's3-beside']) await ok('DELETE', config(name));
      await silent.close();
    }
  });

  test('what each target stored is a snapshot of this installation: it restores', async () => {
    for (const snapshotUrl of Object.values(latest)) await restores(await download(snapshotUrl));
    // The snapshots were taken while their configurations existed: the restore brought them back.
    for (const name of (await ok('LIST', 'sys/storage/raft/snapshot-auto/config')).data.keys as string[]) await ok('DELETE', config(name));
  });
});
