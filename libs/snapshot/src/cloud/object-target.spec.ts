import { generateKeyPairSync } from 'node:crypto';
import { checkConfig, type SnapshotConfig } from '../config';
import { createTarget } from '../targets';
import { withTimeout, writeTimeoutMs } from './object-target';

const NAME = 'service-snapshot-1795462916734000000.snap';
const urlOf = async (config: Partial<SnapshotConfig>) => {
  const target = await createTarget(checkConfig({ interval: 60, ...config }));
  try {
    return target.url(NAME);
  } finally {
    target.close();
  }
};

describe('cloud snapshot targets: the status URL of a snapshot', () => {
  const s3 = { storage_type: 'cloud-objstore' as const, cloud_objstore_bucket: 'backups', cloud_objstore_region: 'eu-west-1' };

  test.each([
    ['nightly', `s3://backups/nightly/${NAME}`],
    ['nightly/', `s3://backups/nightly/${NAME}`],
    ['/nightly/daily', `s3://backups/nightly/daily/${NAME}`],
  ])('cloud-objstore, path_prefix %p (its trailing "/" optional)', async (path_prefix, url) => {
    expect(await urlOf({ ...s3, path_prefix })).toBe(url);
  });

  test.each([
    [undefined, `https://acct.blob.core.windows.net/snaps/cluster/${NAME}`],
    ['AzureChinaCloud', `https://acct.blob.core.chinacloudapi.cn/snaps/cluster/${NAME}`],
    ['AzureUSGovernmentCloud', `https://acct.blob.core.usgovcloudapi.net/snaps/cluster/${NAME}`],
  ])('cloudb-blob in environment %p: the account URL of that cloud', async (cloudb_blob_environment, url) => {
    const blob = { storage_type: 'cloudb-blob' as const, path_prefix: 'cluster/', cloudb_container_name: 'snaps', cloudb_account_name: 'acct', cloudb_account_key: Buffer.alloc(64).toString('base64') };
    expect(await urlOf({ ...blob, cloudb_blob_environment })).toBe(url);
  });

  test('cloudb-blob with an endpoint: the blob URL under it', async () => {
    expect(await urlOf({ storage_type: 'cloudb-blob', path_prefix: 'cluster/', cloudb_container_name: 'snaps', cloudb_account_name: 'acct', cloudb_account_key: 'a2V5', cloudb_endpoint: 'http://127.0.0.1:10000/acct' })).toBe(`http://127.0.0.1:10000/acct/snaps/cluster/${NAME}`);
  });

  test('cloudc-bucket: gs://bucket/key', async () => {
    const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const key = JSON.stringify({ type: 'service_account', client_email: 'sa@project.iam.gserviceaccount.com', private_key: privateKey, private_key_id: 'k1', project_id: 'project' });
    expect(await urlOf({ storage_type: 'cloudc-bucket', path_prefix: 'cluster/', cloudc_bucket: 'vault-backups', cloudc_service_account_key: key })).toBe(`gs://vault-backups/cluster/${NAME}`);
  });
});

describe('a write deadline', () => {
  it('is whole milliseconds for any size, which AbortSignal.timeout requires', async () => {
    for (const bytes of [0, 1, 1500, 3 * 1024 * 1024 + 7]) {
      const ms = writeTimeoutMs(bytes);
      expect(Number.isInteger(ms)).toBe(true);
      await expect(withTimeout('upload', ms, async () => 'done')).resolves.toBe('done');
    }
  });
});
