import { StubApi, eventually } from '@svc/testing';
import { SealUnavailableError } from './key-wrapper';
import { TransitKeyWrapper, type TransitSealConfig } from './transit-seal';

const TOKEN = 'seal-token-never-in-errors';

describe('TransitKeyWrapper', () => {
  let stub: StubApi;
  let wrapper: TransitKeyWrapper | undefined;
  const config = (overrides: Partial<TransitSealConfig> = {}): TransitSealConfig => ({
    type: 'transit',
    address: stub.address,
    token: TOKEN,
    keyName: 'auto unseal',
    mountPath: '/ops/transit/',
    namespace: 'team/',
    disableRenewal: true,
    ...overrides,
  });

  beforeEach(async () => {
    stub = await StubApi.start();
  });

  afterEach(async () => {
    wrapper?.close();
    await stub.close();
  });

  it('wraps and unwraps through encrypt and decrypt of its key, with its token and namespace', async () => {
    stub.reply = (request) =>
      request.url.includes('/encrypt/')
        ? { status: 200, body: { data: { ciphertext: 'vault:v1:abc' } } }
        : { status: 200, body: { data: { plaintext: Buffer.from('root key').toString('base64') } } };
    wrapper = new TransitKeyWrapper(config());
    const wrapped = await wrapper.wrap(Buffer.from('root key'));
    expect(wrapped.toString()).toBe('vault:v1:abc');
    expect((await wrapper.unwrap(wrapped)).toString()).toBe('root key');

    const [encrypt, decrypt] = stub.requests;
    expect([encrypt.method, encrypt.url]).toEqual(['POST', '/v1/ops/transit/encrypt/auto%20unseal']);
    expect(JSON.parse(encrypt.body)).toEqual({ plaintext: Buffer.from('root key').toString('base64') });
    expect(encrypt.headers).toMatchObject({ 'x-service-token': TOKEN, 'x-service-namespace': 'team/' });
    expect([decrypt.url, JSON.parse(decrypt.body)]).toEqual(['/v1/ops/transit/decrypt/auto%20unseal', { ciphertext: 'vault:v1:abc' }]);
  });

  it('reports a refusal or an unreachable provider as SealUnavailableError, naming it and never the token', async () => {
    stub.reply = () => ({ status: 403, body: { errors: ['permission denied'] } });
    wrapper = new TransitKeyWrapper(config());
    const refused = await wrapper.unwrap(Buffer.from('vault:v1:abc')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SealUnavailableError);
    expect((refused as Error).message).toBe(`transit seal at ${stub.address} (ops/transit/decrypt/auto%20unseal): answered 403: permission denied`);

    const closed = stub.address;
    await stub.close();
    stub = await StubApi.start();
    const unreachable = await new TransitKeyWrapper(config({ address: closed })).wrap(Buffer.from('x')).catch((err: unknown) => err);
    expect(unreachable).toBeInstanceOf(SealUnavailableError);
    expect((unreachable as Error).message).toMatch(/: unreachable: /);
    expect(`${(refused as Error).message} ${(unreachable as Error).message}`).not.toContain(TOKEN);
  });

  it('renews its token at half the TTL the provider gives, and reports a failed renewal', async () => {
    let renewals = 0;
    stub.reply = (request) => {
      expect(request.url).toBe('/v1/auth/token/renew-self');
      renewals++;
      return renewals < 3 ? { status: 200, body: { auth: { lease_duration: 1, renewable: true } } } : { status: 403, body: { errors: ['permission denied'] } };
    };
    const failures: string[] = [];
    wrapper = new TransitKeyWrapper(config({ disableRenewal: false }), (err) => failures.push(err.message));
    wrapper.start();
    await eventually(async () => failures.length > 0, 5_000);
    expect(renewals).toBe(3);
    expect(failures[0]).toMatch(/auth\/token\/renew-self\): answered 403: permission denied/);
  });

  it.each([
    ['a token that does not expire', false, ['/v1/auth/token/renew-self', '/v1/ops/transit/encrypt/auto%20unseal']],
    ['renewal disabled', true, ['/v1/ops/transit/encrypt/auto%20unseal']],
  ])('does not renew with %s', async (_case, disableRenewal, expected) => {
    stub.reply = (request) =>
      request.url.includes('renew-self') ? { status: 200, body: { auth: { lease_duration: 0, renewable: false } } } : { status: 200, body: { data: { ciphertext: 'vault:v1:abc' } } };
    wrapper = new TransitKeyWrapper(config({ disableRenewal }));
    wrapper.start();
    await eventually(async () => stub.requests.length === expected.length - 1, 5_000);
    await wrapper.wrap(Buffer.from('root key'));
    expect(stub.requests.map((request) => request.url)).toEqual(expected);
  });
});
