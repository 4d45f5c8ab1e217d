import { envelope } from '@svc/api-contract';
import { type RecordedRequest, StubApi } from '@svc/testing';
import { SvcClient, type RenewalEnd } from './index';

/** The client's token renewed by a server that grants `granted` seconds at each renewal, in turn. */
async function renewals(api: StubApi, ttl: number, granted: number[], renewable = true) {
  const asked: string[] = [];
  api.reply = (request: RecordedRequest) => {
    asked.push(request.url);
    if (request.url === '/v1/auth/token/lookup-self') return { status: 200, body: envelope('r1', { data: { ttl, renewable } }) };
    const next = granted.shift();
    if (next === undefined) return { status: 403, body: { errors: ['permission denied'] } };
    return { status: 200, body: { auth: { client_token: 's.t', lease_duration: next, renewable: true } } };
  };
  return asked;
}

/** The first end a renewal reports, and all it reported by then. */
function ending(): { onEnd: (reason: RenewalEnd) => void; ended: Promise<RenewalEnd>; all: RenewalEnd[] } {
  const all: RenewalEnd[] = [];
  let first: (reason: RenewalEnd) => void = () => {};
  const ended = new Promise<RenewalEnd>((resolve) => (first = resolve));
  return { all, ended, onEnd: (reason) => (all.push(reason), first(reason)) };
}

// TTLs are fractions of a second here (the server grants what the stub says), so renewals come quickly.
describe('keeping the client\'s token and leases renewed', () => {
  let api: StubApi;
  let client: SvcClient;

  beforeAll(async () => {
    api = await StubApi.start();
    client = new SvcClient({ address: api.address, token: 's.t' });
  });
  afterAll(() => api.close());

  it('renews the token at two thirds of each granted TTL, until a renewal grants almost nothing (max-ttl)', async () => {
    const asked = await renewals(api, 0.3, [0.3, 0.3, 0.01]);
    const end = ending();
    await client.tokens.keepRenewed(end.onEnd);
    expect(await end.ended).toBe('max-ttl');
    expect(asked).toEqual(['/v1/auth/token/lookup-self', ...Array(3).fill('/v1/auth/token/renew-self')]);
    expect(end.all).toEqual(['max-ttl']);
  });

  it('ends with the error of a refused renewal, once; stop() ends a renewal as stopped', async () => {
    await renewals(api, 0.3, []);
    const refused = ending();
    const renewal = await client.tokens.keepRenewed(refused.onEnd);
    expect(await refused.ended).toMatchObject({ status: 403 });
    renewal.stop();
    expect(refused.all).toHaveLength(1);

    const asked = await renewals(api, 30, [30]);
    const stopped = ending();
    (await client.tokens.keepRenewed(stopped.onEnd)).stop();
    expect([await stopped.ended, asked]).toEqual(['stopped', ['/v1/auth/token/lookup-self']]);
  });

  it('a token that never expires needs no renewal', async () => {
    const asked = await renewals(api, 0, [], false);
    const end = ending();
    await client.tokens.keepRenewed(end.onEnd);
    expect([await end.ended, asked]).toEqual(['max-ttl', ['/v1/auth/token/lookup-self']]);
  });

  it('keeps a lease renewed through sys/leases/renew', async () => {
    const granted = [0.3, 0.01];
    const asked: string[] = [];
    api.reply = (request) => {
      asked.push(request.url);
      return { status: 200, body: envelope('r1', { lease_id: 'db/creds/app/1', lease_duration: granted.shift() ?? 0, renewable: true }) };
    };
    const end = ending();
    client.leases.keepRenewed('db/creds/app/1', 0.3, end.onEnd);
    expect(await end.ended).toBe('max-ttl');
    expect(asked).toEqual(['/v1/sys/leases/renew', '/v1/sys/leases/renew']);
  });
});
