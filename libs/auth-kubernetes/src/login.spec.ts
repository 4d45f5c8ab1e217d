import type { AuthResponse } from '@svc/framework';
import { refusal, type MountedBackend, type RequestExtras } from '@svc/testing';
import { kubernetesFixture, tamperedToken } from './testing/fixture';

const REVIEW = 'POST /apis/authentication.k8s.io/v1/tokenreviews';

describe('kubernetes auth method: login', () => {
  const k8s = kubernetesFixture();
  let web: { uid: string };

  beforeAll(() => {
    web = k8s.api.addServiceAccount('shop', 'web');
    k8s.api.addServiceAccount('shop', 'web-worker');
    k8s.api.addServiceAccount('shop', 'admin');
    k8s.api.addServiceAccount('jobs', 'web');
    k8s.api.addNamespace('payments', { team: 'money', stage: 'prod' });
    k8s.api.addServiceAccount('payments', 'web', {
      annotations: { 'vault.hashicorp.com/alias-metadata-team': 'money', 'vault.hashicorp.com/alias-metadata-tier': 'gold', 'other.io/note': 'not metadata' },
    });
    k8s.api.addNamespace('sandbox', { team: 'money', stage: 'dev' });
    k8s.api.addServiceAccount('sandbox', 'web');
  });

  const login = async (method: MountedBackend, role: string, jwt: string, extras?: RequestExtras): Promise<AuthResponse> =>
    (await method.request('update', 'login', { role, jwt }, extras))!.auth!;
  const token = (namespace: string, name: string, audiences = ['vault']) => k8s.api.issueToken(namespace, name, { audiences });
  /** The method, configured, with a role `shop` for `web*` in `shop` and tokens for the audience "vault". */
  const shopMethod = async (role: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => {
    const method = await k8s.configured(config);
    await method.write('role/shop', { bound_service_account_names: 'web*', bound_service_account_namespaces: 'shop', audience: 'vault', token_policies: 'shop-reader', token_ttl: '20m', ...role });
    return method;
  };
  /** A refusal, checked to keep the JWT out of its message. */
  const refused = async (attempt: Promise<unknown>, jwt: string) => {
    const answer = await refusal(attempt);
    expect(answer.message).not.toContain(jwt);
    return answer;
  };

  it('logs a bound service account in after Kubernetes reviewed its JWT: metadata, display name and alias by uid', async () => {
    const method = await shopMethod();
    const calls = k8s.api.calls.length;
    expect(await login(method, 'SHOP', token('shop', 'web'))).toMatchObject({
      policies: ['shop-reader'],
      ttl: 1200,
      renewable: true,
      displayName: 'shop-web',
      metadata: { service_account_name: 'web', service_account_namespace: 'shop', service_account_uid: web.uid, service_account_secret_name: '', role: 'shop' },
      alias: { name: web.uid, metadata: { service_account_name: 'web', service_account_namespace: 'shop', service_account_uid: web.uid, service_account_secret_name: '' } },
      internalData: { role: 'shop', service_account_namespace: 'shop', service_account_name: 'web', service_account_uid: web.uid },
    });
    // The token is for "vault" alone: the review succeeded because it asked for that audience, not the API server's.
    expect(k8s.api.calls.slice(calls)).toEqual([REVIEW]);
  });

  it('names the alias <namespace>/<name> with alias_name_source serviceaccount_name', async () => {
    const method = await shopMethod({ alias_name_source: 'serviceaccount_name' });
    expect((await login(method, 'shop', token('shop', 'web-worker'))).alias?.name).toBe('shop/web-worker');
  });

  it.each([
    ['a name the role does not bind', 'shop', 'admin', /^permission denied: service account name "admin" is not bound by role "shop"$/],
    ['a namespace the role does not bind', 'jobs', 'web', /^permission denied: namespace "jobs" is not bound by role "shop"$/],
  ])('refuses %s (403)', async (_, namespace, name, message) => {
    const method = await shopMethod();
    const jwt = token(namespace, name);
    expect(await refused(login(method, 'shop', jwt), jwt)).toEqual({ status: 403, message: expect.stringMatching(message) });
  });

  it('binds namespaces by label selector, read from the API server with the reviewer token', async () => {
    const method = await shopMethod({ bound_service_account_namespaces: '', bound_service_account_namespace_selector: 'matchLabels:\n  team: money\nmatchExpressions:\n  - {key: stage, operator: NotIn, values: [dev]}\n' });
    const calls = k8s.api.calls.length;
    expect(await login(method, 'shop', token('payments', 'web'))).toMatchObject({ displayName: 'payments-web' });
    expect(k8s.api.calls.slice(calls)).toEqual([REVIEW, 'GET /api/v1/namespaces/payments']);
    for (const namespace of ['sandbox', 'shop']) {
      const jwt = token(namespace, 'web');
      expect(await refused(login(method, 'shop', jwt), jwt)).toEqual({ status: 403, message: `permission denied: namespace "${namespace}" is not bound by role "shop"` });
    }
    // Listed namespaces are allowed without asking the API server.
    await method.write('role/shop', { bound_service_account_namespaces: 'shop' });
    const before = k8s.api.calls.length;
    await login(method, 'shop', token('shop', 'web'));
    expect(k8s.api.calls.slice(before)).toEqual([REVIEW]);
  });

  it('requires the role\'s audience in the JWT and in the TokenReview', async () => {
    const method = await shopMethod();
    const calls = k8s.api.calls.length;
    const jwt = token('shop', 'web', ['other-service']);
    expect(await refused(login(method, 'shop', jwt), jwt)).toEqual({ status: 403, message: 'permission denied: the JWT was not issued for the audience "vault"' });
    expect(k8s.api.calls.length).toBe(calls);
    // Without an audience on the role the review is for the token's own: the API server's default.
    await method.write('role/shop', { audience: '' });
    expect(await login(method, 'shop', k8s.api.issueToken('shop', 'web'))).toMatchObject({ displayName: 'shop-web' });
  });

  it.each<[string, () => string, RegExp]>([
    ['an expired JWT', () => k8s.api.issueToken('shop', 'web', { audiences: ['vault'], expiresIn: -600 }), /^permission denied: the JWT has expired$/],
    ['a tampered JWT', () => tamperedToken(token('shop', 'web-worker'), (claims) => Object.assign(claims, { 'kubernetes.io': { namespace: 'shop', serviceaccount: { name: 'web', uid: web.uid } } })), /^permission denied: Kubernetes did not authenticate the JWT/],
    ['the JWT of a deleted account', () => {
      k8s.api.addServiceAccount('shop', 'web-gone');
      const jwt = token('shop', 'web-gone');
      k8s.api.deleteServiceAccount('shop', 'web-gone');
      return jwt;
    }, /^permission denied: Kubernetes did not authenticate the JWT: .*deleted/],
  ])('refuses %s (403)', async (_, jwt, message) => {
    const method = await shopMethod();
    const given = jwt();
    expect(await refused(login(method, 'shop', given), given)).toEqual({ status: 403, message: expect.stringMatching(message) });
  });

  it.each<[string, () => Record<string, unknown>, RegExp]>([
    ['an unknown role', () => ({ role: 'nobody', jwt: token('shop', 'web') }), /^invalid role name "nobody"$/],
    ['no role', () => ({ jwt: token('shop', 'web') }), /^missing required field "role"$/],
    ['no JWT', () => ({ role: 'shop' }), /^missing required field "jwt"$/],
    ['a JWT that is not one', () => ({ role: 'shop', jwt: 'not.a-jwt' }), /^field "jwt": not a JWT/],
    ['an unsigned JWT', () => ({ role: 'shop', jwt: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.x` }), /^field "jwt": signing algorithm "none" is not one Kubernetes uses/],
  ])('refuses %s with a 400', async (_, body, message) => {
    const method = await shopMethod();
    expect(await refusal(method.request('update', 'login', body()))).toEqual({ status: 400, message: expect.stringMatching(message) });
  });

  it('refuses a login before the method is configured, and from outside the role\'s token_bound_cidrs', async () => {
    const unconfigured = k8s.mount();
    await unconfigured.write('role/shop', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop' });
    expect(await refusal(login(unconfigured, 'shop', token('shop', 'web')))).toEqual({ status: 400, message: expect.stringMatching(/not configured/) });
    const method = await shopMethod({ token_bound_cidrs: '10.0.0.0/8' });
    expect(await refusal(login(method, 'shop', token('shop', 'web'), { remoteAddress: '192.168.0.9' }))).toEqual({ status: 403, message: expect.stringMatching(/token_bound_cidrs/) });
    expect(await login(method, 'shop', token('shop', 'web'), { remoteAddress: '10.1.2.3' })).toMatchObject({ boundCidrs: ['10.0.0.0/8'] });
  });

  it('checks the issuer when disable_iss_validation is false', async () => {
    const method = await shopMethod({}, { disable_iss_validation: false });
    const jwt = token('shop', 'web');
    expect(await refused(login(method, 'shop', jwt), jwt)).toEqual({ status: 403, message: 'permission denied: the JWT\'s issuer is not "kubernetes/serviceaccount"' });
    await method.write('config', { issuer: k8s.api.issuer });
    expect(await login(method, 'shop', jwt)).toMatchObject({ displayName: 'shop-web' });
  });

  it('adds the account\'s alias-metadata annotations to the alias, and refuses one that would replace the method\'s own', async () => {
    const method = await shopMethod({ bound_service_account_namespaces: 'payments' }, { use_annotations_as_alias_metadata: true });
    const auth = await login(method, 'shop', token('payments', 'web'));
    expect(auth.alias?.metadata).toEqual({ team: 'money', tier: 'gold', service_account_name: 'web', service_account_namespace: 'payments', service_account_uid: expect.any(String), service_account_secret_name: '' });
    expect(auth.metadata).not.toHaveProperty('team');
    k8s.api.addServiceAccount('payments', 'web-sneaky', { annotations: { 'vault.hashicorp.com/alias-metadata-service_account_name': 'admin' } });
    expect(await refusal(login(method, 'shop', token('payments', 'web-sneaky')))).toEqual({ status: 400, message: expect.stringMatching(/"service_account_name" is reserved/) });
  });

  it('renews with the role\'s current settings while it still binds the account, and refuses otherwise', async () => {
    const method = await shopMethod();
    const auth = await login(method, 'shop', token('shop', 'web'));
    await method.write('role/shop', { token_policies: 'shop-reader,shop-writer', token_ttl: '30m' });
    expect(await method.renewAuth(auth)).toMatchObject({ policies: ['shop-reader', 'shop-writer'], ttl: 1800, alias: { name: web.uid } });

    await method.write('role/shop', { alias_name_source: 'serviceaccount_name' });
    expect(await refusal(method.renewAuth(auth))).toEqual({ status: 400, message: 'the alias_name_source of role "shop" changed; the token cannot be renewed' });
    await method.write('role/shop', { alias_name_source: 'serviceaccount_uid', bound_service_account_names: 'worker' });
    expect(await refusal(method.renewAuth(auth))).toEqual({ status: 400, message: 'service account name "web" is not bound by role "shop" any more; the token cannot be renewed' });
    await method.request('delete', 'role/shop');
    expect(await refusal(method.renewAuth(auth))).toEqual({ status: 400, message: 'role "shop" no longer exists; the token cannot be renewed' });
  });
});
