/**
 * The Kubernetes API emulator reviews service-account tokens as the API server does, and serves
 * only callers whose token is good and whose account holds the permission.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createTestCa } from '@svc/testing';
import { decodeJwt } from './jwt';
import { startKubernetesApi, tamperedToken, type KubernetesApiEmulator } from './kubernetes-api';

const REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';

describe('Kubernetes API emulator', () => {
  let dir: string;
  let ca: string;
  let api: KubernetesApiEmulator;
  let reviewerToken: string;

  /** A request to the API server over TLS, trusting the test's CA. */
  const call = (method: string, urlPath: string, bearer: string, body?: unknown) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = request(`${api.url}${urlPath}`, { method, ca, headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  const review = async (token: string, audiences?: string[], bearer = reviewerToken) => {
    const answer = await call('POST', REVIEWS, bearer, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } });
    expect(answer.status).toBe(201);
    return answer.body.status as Record<string, unknown>;
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-kubernetes-api-test-'));
    const testCa = createTestCa(dir, 'svc kubernetes test CA');
    ca = readFileSync(testCa.caCert, 'utf8');
    api = await startKubernetesApi(testCa.issue('kubernetes', ['127.0.0.1']));
    api.addServiceAccount('vault', 'reviewer', { permissions: ['create tokenreviews', 'get namespaces'] });
    reviewerToken = api.issueToken('vault', 'reviewer');
  });
  afterAll(async () => {
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('issues tokens with the claims of a projected service-account token', () => {
    const app = api.addServiceAccount('shop', 'web');
    const token = decodeJwt(api.issueToken('shop', 'web', { audiences: ['vault'] }))!;
    expect(token.header).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
    expect(token.payload).toMatchObject({
      iss: api.issuer,
      sub: 'system:serviceaccount:shop:web',
      aud: ['vault'],
      'kubernetes.io': { namespace: 'shop', serviceaccount: { name: 'web', uid: app.uid } },
    });
    const { exp, iat, nbf } = token.payload as Record<string, number>;
    expect(exp - iat).toBe(3600);
    expect(nbf).toBe(iat);
  });

  test('a good token is authenticated as its service account, for the audiences it shares with the review', async () => {
    const app = api.addServiceAccount('shop', 'cart');
    const token = api.issueToken('shop', 'cart', { audiences: ['vault', 'other'] });
    expect(await review(token, ['vault'])).toEqual({
      authenticated: true,
      user: { username: 'system:serviceaccount:shop:cart', uid: app.uid, groups: ['system:serviceaccounts', 'system:serviceaccounts:shop', 'system:authenticated'] },
      audiences: ['vault'],
    });
    // Without audiences the review is for the API server's own.
    expect(await review(api.issueToken('shop', 'cart'))).toMatchObject({ authenticated: true, audiences: [api.issuer] });
  });

  test.each<[string, (token: string) => string, string[] | undefined, RegExp]>([
    ['an expired token', () => api.issueToken('shop', 'orders', { expiresIn: -600 }), undefined, /has expired/],
    ['a tampered token', (token) => tamperedToken(token, (claims) => Object.assign(claims, { 'kubernetes.io': { namespace: 'kube-system', serviceaccount: { name: 'admin' } } })), undefined, /invalid bearer token/],
    ['a token for another audience', (token) => token, ['vault'], /token audiences \["https:.*"\] is invalid for the target audiences \["vault"\]/],
  ])('%s is not authenticated', async (_, make, audiences, error) => {
    api.addServiceAccount('shop', 'orders');
    expect(await review(make(api.issueToken('shop', 'orders')), audiences)).toEqual({ authenticated: false, user: {}, error: expect.stringMatching(error) });
  });

  test('the tokens of a deleted account no longer authenticate, even when an account of that name is made again', async () => {
    api.addServiceAccount('shop', 'gone');
    const deleted = api.issueToken('shop', 'gone');
    api.deleteServiceAccount('shop', 'gone');
    expect(await review(deleted)).toMatchObject({ authenticated: false, error: expect.stringMatching(/deleted/) });
    api.addServiceAccount('shop', 'gone');
    expect(await review(deleted)).toMatchObject({ authenticated: false });
  });

  test('tokens signed with a replaced key no longer authenticate, under review or as the caller\'s credentials', async () => {
    api.addServiceAccount('shop', 'web');
    const before = api.issueToken('shop', 'web');
    const [oldReviewerToken, oldKey] = [reviewerToken, api.publicKeyPem()];
    api.rotateKey();
    reviewerToken = api.issueToken('vault', 'reviewer');
    expect(api.publicKeyPem()).not.toBe(oldKey);
    expect(await review(before)).toMatchObject({ authenticated: false });
    expect(await review(api.issueToken('shop', 'web'))).toMatchObject({ authenticated: true });
    expect(await call('POST', REVIEWS, oldReviewerToken, { kind: 'TokenReview', spec: { token: before } })).toMatchObject({ status: 401 });
  });

  test('refuses a caller without a good token (401) or without the permission (403), with Status objects', async () => {
    api.addServiceAccount('shop', 'intruder');
    const token = api.issueToken('shop', 'intruder');
    const body = { kind: 'TokenReview', spec: { token } };
    expect(await call('POST', REVIEWS, 'not-a-token', body)).toEqual({
      status: 401,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 },
    });
    expect(await call('POST', REVIEWS, api.issueToken('vault', 'reviewer', { expiresIn: -600 }), body)).toMatchObject({ status: 401 });
    // A token for another audience is not a credential for the API server.
    expect(await call('POST', REVIEWS, api.issueToken('vault', 'reviewer', { audiences: ['vault'] }), body)).toMatchObject({ status: 401 });
    expect(await call('POST', REVIEWS, token, body)).toEqual({
      status: 403,
      body: expect.objectContaining({
        reason: 'Forbidden',
        code: 403,
        message: 'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:shop:intruder" cannot create resource "tokenreviews"',
      }),
    });
    expect(await call('GET', '/api/v1/namespaces/shop', token)).toMatchObject({ status: 403 });
  });

  test('serves namespaces with their labels and service accounts with their annotations to accounts allowed to read them', async () => {
    api.addNamespace('payments', { team: 'money', stage: 'prod' });
    expect(await call('GET', '/api/v1/namespaces/payments', reviewerToken)).toEqual({
      status: 200,
      body: expect.objectContaining({ kind: 'Namespace', metadata: expect.objectContaining({ name: 'payments', labels: { team: 'money', stage: 'prod', 'kubernetes.io/metadata.name': 'payments' } }) }),
    });
    expect(await call('GET', '/api/v1/namespaces/nowhere', reviewerToken)).toMatchObject({ status: 404, body: { reason: 'NotFound', message: 'namespaces "nowhere" not found' } });

    api.addServiceAccount('payments', 'ledger', { annotations: { 'vault.hashicorp.com/alias-metadata-team': 'money' } });
    expect(await call('GET', '/api/v1/namespaces/payments/serviceaccounts/ledger', reviewerToken)).toMatchObject({ status: 403 });
    api.addServiceAccount('vault', 'reader', { permissions: ['get serviceaccounts'] });
    expect(await call('GET', '/api/v1/namespaces/payments/serviceaccounts/ledger', api.issueToken('vault', 'reader'))).toMatchObject({
      status: 200,
      body: { kind: 'ServiceAccount', metadata: { name: 'ledger', namespace: 'payments', annotations: { 'vault.hashicorp.com/alias-metadata-team': 'money' } } },
    });
  });

  test('answers an injected failure, once', async () => {
    api.addServiceAccount('shop', 'flaky');
    api.failNext('tokenreviews', 500, 'etcdserver: request timed out');
    const body = { kind: 'TokenReview', spec: { token: api.issueToken('shop', 'flaky') } };
    expect(await call('POST', REVIEWS, reviewerToken, body)).toMatchObject({ status: 500, body: { message: 'etcdserver: request timed out' } });
    expect(await call('POST', REVIEWS, reviewerToken, body)).toMatchObject({ status: 201 });
  });
});
