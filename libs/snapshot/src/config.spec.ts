import { checkConfig, publicConfig } from './config';

describe('automated snapshot configuration', () => {
  const local = { interval: 3600, path_prefix: '/backups', storage_type: 'local' as const, local_max_space: 1_000 };

  it('fills the defaults and hides credentials on read', () => {
    expect(checkConfig(local)).toEqual({ ...local, retain: 1, file_prefix: 'service-snapshot' });
    const s3 = checkConfig({ interval: 60, path_prefix: 'p', storage_type: 'cloud-objstore', cloud_objstore_bucket: 'b', cloud_objstore_region: 'r', cloud_access_key_id: 'AK', cloud_secret_access_key: 'SK', cloud_session_token: 'T' });
    expect(publicConfig(s3)).not.toHaveProperty('cloud_secret_access_key');
    expect(publicConfig(s3)).not.toHaveProperty('cloud_session_token');
    expect(publicConfig(s3)).toHaveProperty('cloud_access_key_id', 'AK');
  });

  it.each([
    [{ ...local, file_prefix: 'a/b' }, 'file_prefix must be a non-empty name without "/"'],
    [{ ...local, local_max_space: -1 }, 'local_max_space must be a positive number of bytes'],
    [{ interval: 1, path_prefix: 'p/', storage_type: 'cloudc-bucket' as const }, 'missing required field "cloudc_bucket" for storage_type cloudc-bucket'],
    [{ interval: 1, path_prefix: 'p/', storage_type: 'cloudb-blob' as const, cloudb_container_name: 'c', cloudb_account_key: 'k', cloudb_endpoint: 'http://x' }, 'cloudb_account_key needs cloudb_account_name'],
    [{ interval: 1, path_prefix: 'p', storage_type: 'cloud-objstore' as const, cloud_objstore_bucket: 'b', cloud_objstore_region: 'r', cloud_objstore_kms_key: 'k' }, 'cloud_objstore_kms_key needs cloud_objstore_enable_kms'],
    [{ interval: 1, path_prefix: 'p', storage_type: 'cloud-objstore' as const, cloud_objstore_bucket: 'b', cloud_objstore_region: 'r', cloud_objstore_endpoint: 'ftp://x' }, 'cloud_objstore_endpoint must be an http or https URL, or a host[:port]'],
  ])('refuses %j', (config, message) => {
    expect(() => checkConfig(config)).toThrow(message);
  });
});
