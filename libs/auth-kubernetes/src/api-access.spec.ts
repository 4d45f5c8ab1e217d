import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuthResponse } from '@svc/framework';
import { refusal, type MountedBackend } from '@svc/testing';
import { kubernetesFixture, startStallingProxy, tamperedToken } from './testing/fixture';

/** How the method reaches the API server: credentials, CA, pem_keys instead, and an API server that fails. */
describe('kubernetes auth method: the API server', () => {
  const k8s = kubernetesFixture();

  beforeAll(() => {
    k8s.api.addServiceAccount('shop', 'web');
    k8s.api.addServiceAccount('shop', 'web-delegator', { permissions: ['create tokenreviews'] });
  });

  const login = async (method: MountedBackend, jwt: string): Promise<AuthResponse> => (await method.request('update', 'login', { role: 'shop', jwt }))!.auth!;
  const withRole = async (method: MountedBackend) => {
    await method.write('role/shop', { bound_service_account_names: 'web*', bound_service_account_namespaces: 'shop', audience: 'vault' });
    return method;
  };
  const token = (name = 'web') => k8s.api.issueToken('shop', name, { audiences: ['vault'] });
  /** The refusal of a login with `jwt`, whose message must not contain it. */
  const refused = async (method: MountedBackend, jwt: string) => {
    const answer = await refusal(login(method, jwt));
    expect(answer.message).not.toContain(jwt);
    return answer;
  };

  it('verifies JWTs against pem_keys without calling the API server', async () => {
    const method = await withRole(k8s.mount());
    // Nothing listens there: a call would fail the login.
    await method.write('config', { kubernetes_host: 'https://127.0.0.1:1', pem_keys: [k8s.api.publicKeyPem()] });
    const calls = k8s.api.calls.length;
    expect(await login(method, token())).toMatchObject({ displayName: 'shop-web', metadata: { service_account_name: 'web', service_account_namespace: 'shop' } });
    const forged = tamperedToken(token(), (claims) => Object.assign(claims, { 'kubernetes.io': { namespace: 'shop', serviceaccount: { name: 'web-admin', uid: 'x' } } }));
    expect(await refused(method, forged)).toEqual({ status: 403, message: 'permission denied: the JWT\'s signature does not verify with the configured pem_keys' });
    expect(k8s.api.calls.length).toBe(calls);
  });

  it('takes the reviewer token and the CA from the pod\'s service-account directory, read at each login', async () => {
    const method = await withRole(k8s.mount());
    await method.write('config', { kubernetes_host: k8s.api.url });
    writeFileSync(join(k8s.podDir, 'ca.crt'), k8s.caCert);
    writeFileSync(join(k8s.podDir, 'token'), `${k8s.reviewerJwt}\n`);
    // The client's account may not create TokenReviews: the pod's token made this one.
    expect(await login(method, token())).toMatchObject({ displayName: 'shop-web' });

    // A rotated token file is picked up by the next login.
    writeFileSync(join(k8s.podDir, 'token'), 'not-a-valid-token');
    expect(await refused(method, token())).toEqual({ status: 502, message: expect.stringMatching(new RegExp(`^the Kubernetes API server at ${k8s.api.url} answered 401: Unauthorized to the TokenReview$`)) });
    writeFileSync(join(k8s.podDir, 'token'), k8s.api.issueToken('vault', 'reviewer'));
    expect(await login(method, token())).toMatchObject({ displayName: 'shop-web' });

    // With disable_local_ca_jwt the pod's files are ignored: no CA the emulator's certificate chains to.
    await method.write('config', { disable_local_ca_jwt: true });
    expect(await refused(method, token())).toEqual({ status: 502, message: expect.stringMatching(/^the Kubernetes API server at .* did not answer: .*certificate/) });
  });

  it('calls the TokenReview API with the login\'s own JWT when there is no reviewer token', async () => {
    const method = await withRole(k8s.mount());
    await method.write('config', { kubernetes_host: k8s.api.url, kubernetes_ca_cert: k8s.caCert });
    // The API server accepts the JWT as a credential only for its own audience, and the account must
    // be allowed to review tokens.
    await method.write('role/shop', { audience: '' });
    expect(await login(method, k8s.api.issueToken('shop', 'web-delegator'))).toMatchObject({ displayName: 'shop-web-delegator' });
    const jwt = k8s.api.issueToken('shop', 'web');
    expect(await refused(method, jwt)).toEqual({
      status: 403,
      message: expect.stringMatching(/^permission denied: the Kubernetes API server refused the TokenReview made with the login's JWT, as no token reviewer JWT is configured \(403: .*cannot create resource "tokenreviews"\)$/),
    });
  });

  it('answers 502, naming the API server, when it refuses the reviewer or fails', async () => {
    k8s.api.addServiceAccount('vault', 'not-a-reviewer');
    const method = await withRole(await k8s.configured({ token_reviewer_jwt: k8s.api.issueToken('vault', 'not-a-reviewer') }));
    expect(await refused(method, token())).toEqual({ status: 502, message: expect.stringMatching(/^the Kubernetes API server at https:\/\/127\.0\.0\.1:\d+ answered 403: .*forbidden.* to the TokenReview$/) });

    const reviewing = await withRole(await k8s.configured());
    k8s.api.failNext('tokenreviews', 500, 'etcdserver: request timed out');
    expect(await refused(reviewing, token())).toEqual({ status: 502, message: `the Kubernetes API server at ${k8s.api.url} answered 500: etcdserver: request timed out to the TokenReview` });
    await reviewing.write('role/shop', { bound_service_account_namespaces: '', bound_service_account_namespace_selector: '{"matchLabels":{"team":"shop"}}' });
    k8s.api.failNext('namespaces', 503, 'the server is currently unable to handle the request');
    expect(await refused(reviewing, token())).toEqual({ status: 502, message: expect.stringMatching(/answered 503: the server is currently unable to handle the request to reading namespace "shop"$/) });
  });

  it('gives up on an API server that accepts the connection and never answers, within the deadline', async () => {
    const proxy = await startStallingProxy(k8s.api.url);
    try {
      proxy.stall();
      const method = await withRole(k8s.mount({ apiDeadlineMs: 300 }));
      await method.write('config', { kubernetes_host: proxy.url, kubernetes_ca_cert: k8s.caCert, token_reviewer_jwt: k8s.reviewerJwt });
      const started = Date.now();
      expect(await refused(method, token())).toEqual({ status: 502, message: `the Kubernetes API server at ${proxy.url} did not answer: no answer within 0.3 s` });
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await proxy.close();
    }
  });
});
