/**
 * The Azure AD directory emulator signs an app in as Azure does: its client secret checked, a
 * token issued only for the resources it serves, shaped as Azure's v1 tokens (what azurite and
 * the Key Vault emulator check), and refused otherwise with Azure's OAuth errors.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createTestCa } from '@svc/testing';
import { decodeJwt } from '../jwt';
import { startAzureDirectory, type AzureDirectoryServer } from './directory';

const RESOURCE = 'https://storage.azure.com';
const APP = { id: 'app-1', secret: 'the-client-secret' };

describe('Azure AD directory emulator: client-credentials sign-in', () => {
  let dir: string;
  let ca: string;
  let directory: AzureDirectoryServer;
  /** A client-credentials token request (over TLS, trusting the test's CA). */
  const signIn = (form: Record<string, string>, tenant = directory.tenantId) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = request(`${directory.url}/${tenant}/oauth2/v2.0/token`, { method: 'POST', ca, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      });
      req.on('error', reject);
      req.end(new URLSearchParams(form).toString());
    });
  const asApp = (overrides: Record<string, string> = {}) => ({ grant_type: 'client_credentials', client_id: APP.id, client_secret: APP.secret, scope: `${RESOURCE}/.default`, ...overrides });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-directory-test-'));
    const testCa = createTestCa(dir, 'svc directory test CA');
    ca = readFileSync(testCa.caCert, 'utf8');
    directory = await startAzureDirectory(testCa.issue('directory', ['127.0.0.1']), [RESOURCE]);
    directory.apps.set(APP.id, APP.secret);
  });
  afterAll(async () => {
    await directory?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the app with its secret gets a v1 token for the resource, which the directory verifies for that resource only', async () => {
    const { status, body } = await signIn(asApp());
    expect(status).toBe(200);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    const token = body.access_token as string;
    expect(decodeJwt(token)?.payload).toMatchObject({ aud: RESOURCE, iss: `https://sts.windows.net/${directory.tenantId}/`, tid: directory.tenantId, appid: APP.id });
    expect(directory.verify(token, RESOURCE)).toHaveProperty('claims');
    expect(directory.verify(token, 'https://vault.azure.net')).toEqual({ problem: 'wrong audience' });
  });

  test.each<[string, Record<string, string>, string | undefined, number, RegExp]>([
    ['a wrong client secret', { client_secret: 'not-it' }, undefined, 401, /AADSTS7000215: Invalid client secret provided/],
    ['an unknown app', { client_id: 'app-2' }, undefined, 400, /AADSTS700016: Application with identifier 'app-2' was not found/],
    ['a resource the directory does not serve', { scope: 'https://vault.azure.net/.default' }, undefined, 400, /AADSTS70011/],
    ['another grant', { grant_type: 'password' }, undefined, 400, /AADSTS70003/],
    ['another tenant', {}, 'some-other-tenant', 400, /AADSTS90002: Tenant 'some-other-tenant' not found/],
  ])('%s is refused', async (_, overrides, tenant, status, description) => {
    const { status: answered, body } = await signIn(asApp(overrides), tenant);
    expect(answered).toBe(status);
    expect(body.error_description).toMatch(description);
    expect(JSON.stringify(body)).not.toContain(APP.secret);
  });
});
