import { httpStatus, ServiceError } from '@svc/api-contract';
import { providerCredentials, providerError, providerRegion } from './provider';

describe('provider settings', () => {
  const env = { CLOUD_ACCESS_KEY: 'AKIAENV', CLOUD_SECRET_KEY: 'env-secret', CLOUD_REGION: 'eu-west-1', CLOUD_DEFAULT_REGION: 'eu-north-1' };

  it('region: the configuration, then CLOUD_REGION, then CLOUD_DEFAULT_REGION, then us-east-1', () => {
    expect(providerRegion({ region: 'ap-south-1' }, env)).toBe('ap-south-1');
    expect(providerRegion({ region: '' }, env)).toBe('eu-west-1');
    expect(providerRegion(null, { CLOUD_DEFAULT_REGION: 'eu-north-1' })).toBe('eu-north-1');
    expect(providerRegion(null, {})).toBe('us-east-1');
  });

  it('credentials: the configuration, then CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, then the SDK chain', () => {
    expect(providerCredentials({ access_key: 'AKIACONF', secret_key: 'conf-secret' }, env)).toEqual({ accessKeyId: 'AKIACONF', secretAccessKey: 'conf-secret' });
    expect(providerCredentials({ access_key: '', secret_key: '' }, env)).toEqual({ accessKeyId: 'AKIAENV', secretAccessKey: 'env-secret' });
    expect(providerCredentials(null, {})).toBeUndefined();
  });
});

describe('provider errors', () => {
  const fault = (name: string, status: number | undefined, message: string) => Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });

  it.each([
    [fault('NoSuchEntityException', 404, 'no user'), 400, 'create user: NoSuchEntity: no user'],
    [fault('Throttling', 400, 'Rate exceeded'), 502, 'create user failed (the provider answered 400): Throttling: Rate exceeded'],
    [fault('ServiceUnavailable', 503, 'busy'), 502, 'create user failed (the provider answered 503): ServiceUnavailable: busy'],
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 502, 'create user failed (the provider did not answer): Error: connect ECONNREFUSED 127.0.0.1:1'],
    [Object.assign(new Error('no answer in time'), { name: 'TimeoutError', endpoint: 'IAM' }), 502, 'create user failed (the provider did not answer): IAM endpoint: TimeoutError: no answer in time'],
  ])('%p -> %p', (err, status, message) => {
    const answer = providerError('create user', err, []);
    expect(answer).toBeInstanceOf(ServiceError);
    expect({ status: httpStatus(answer.kind), errors: answer.errors }).toEqual({ status, errors: [message] });
  });

  it('never repeats a secret the clients sign with', () => {
    expect(providerError('call', fault('InvalidInput', 400, 'bad key s3cr3t'), ['s3cr3t']).errors).toEqual(['call: InvalidInput: bad key <redacted>']);
  });
});
