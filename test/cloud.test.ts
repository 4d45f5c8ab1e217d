/**
 * The cloud-credential engine through the gateway, in both topologies (distributed: the engine is
 * its own `cloud` process on NATS), against the IAM + STS emulator (test/emulators/aws), whose
 * signature check proves that the credentials the engine returns really work: every issued key is
 * used to call GetCallerIdentity. Covers every path and credential type, leases (renew, revoke,
 * expiry), rollback of a user left half-made, rotate-root, static rotation, bad input, a provider
 * that fails or is gone, and the service gone.
 */
import { randomBytes } from 'node:crypto';
import { ANSWER_TIMEOUT_MS } from '@svc/cloud-provider';
import { api, closedPort, eventually, initAndUnseal, startSilentListener, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { ACCOUNT_ID, callerOf, startIamStsEmulator, type IamStsEmulator } from './emulators/aws/iam-sts';

interface Issued {
  status: number;
  errors: string[];
  accessKey: string;
  secretKey: string;
  securityToken: string | null;
  arn: string;
  leaseId: string;
  leaseDuration: number;
  renewable: boolean;
}

const POLICY = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] };
const READ_ONLY = 'arn:aws:iam::aws:policy/ReadOnlyAccess';

describe.each<TopologyKind>(['all-in-one', 'distributed'])('cloud-credential engine, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let rootToken: string;
  let emulator: IamStsEmulator;
  let rootKey: { id: string; secret: string };
  /** Every secret key and session token the engine handled, to look for in the logs. */
  const secrets = new Set<string>();

  beforeAll(async () => {
    emulator = await startIamStsEmulator();
    topology = await startTopology(kind, { services: ['cloud'] });
    url = topology.urls[0];
    ({ rootToken } = await initAndUnseal(url));
    expect((await call('POST', 'sys/mounts/cloud', { type: 'cloud' })).status).toBe(204);
    emulator.state.createUser('svc-root');
    emulator.state.createPolicy(READ_ONLY);
    const key = emulator.state.createAccessKey('svc-root');
    rootKey = { id: key.id, secret: key.secret };
    secrets.add(key.secret);
    await configureRoot();
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    await emulator?.close();
  });

  function call(method: string, path: string, body?: unknown, token = rootToken): Promise<ApiResponse> {
    return api(url, method, `/v1/${path}`, { token, body });
  }

  async function configureRoot(fields: Record<string, unknown> = {}, mount = 'cloud'): Promise<void> {
    const written = await call('POST', `${mount}/config/root`, {
      access_key: rootKey.id,
      secret_key: rootKey.secret,
      iam_endpoint: emulator.url,
      sts_endpoint: emulator.url,
      max_retries: 1,
      ...fields,
    });
    expect({ status: written.status, errors: written.body?.errors }).toEqual({ status: 204, errors: undefined });
  }

  async function writeRole(name: string, body: Record<string, unknown>): Promise<void> {
    const written = await call('POST', `cloud/roles/${name}`, body);
    expect({ status: written.status, errors: written.body?.errors }).toEqual({ status: 204, errors: undefined });
  }

  async function issue(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<Issued> {
    const res = await call(method, path, body);
    const data = (res.body?.data ?? {}) as Record<string, string | null>;
    for (const secret of [data.secret_key, data.security_token]) if (secret) secrets.add(secret);
    return {
      status: res.status,
      errors: res.body?.errors ?? [],
      accessKey: String(data.access_key ?? ''),
      secretKey: String(data.secret_key ?? ''),
      securityToken: data.security_token ?? null,
      arn: String(data.arn ?? ''),
      leaseId: String(res.body?.lease_id ?? ''),
      leaseDuration: Number(res.body?.lease_duration ?? 0),
      renewable: res.body?.renewable === true,
    };
  }

  /**
   * STS credentials are leased until the provider's stated expiry (whole seconds): `ttl` when the
   * answer comes at once, a second or two less when the machine is slow to answer.
   */
  function expectStsLease(issued: Pick<Issued, 'leaseDuration'>, ttl: number): void {
    expect(issued.leaseDuration).toBeLessThanOrEqual(ttl);
    expect(issued.leaseDuration).toBeGreaterThanOrEqual(ttl - 5);
  }

  /** Who the emulator says the credentials belong to: proof that they authenticate. */
  function callerOfIssued(issued: Pick<Issued, 'accessKey' | 'secretKey' | 'securityToken'>): Promise<string> {
    return callerOf(emulator, { accessKeyId: issued.accessKey, secretAccessKey: issued.secretKey, sessionToken: issued.securityToken ?? undefined });
  }

  /** Users other than the root user: what the engine has left at the provider. */
  function managedUsers(): string[] {
    return [...emulator.state.users.keys()].filter((name) => name.startsWith('svc-') && name !== 'svc-root');
  }

  function userOfArn(arn: string): string {
    return arn.slice(arn.lastIndexOf('/') + 1);
  }

  test('config/root hides the secret key; config/lease reads back normalized', async () => {
    const root = await call('GET', 'cloud/config/root');
    expect(root.body.data).toEqual({ access_key: rootKey.id, region: '', iam_endpoint: emulator.url, sts_endpoint: emulator.url, max_retries: 1, username_template: '' });
    expect(root.text).not.toContain(rootKey.secret);
    expect((await call('GET', 'cloud/config/lease')).status).toBe(404);
    expect((await call('POST', 'cloud/config/lease', { lease: '1800s', lease_max: '32d' })).status).toBe(204);
    expect((await call('GET', 'cloud/config/lease')).body.data).toEqual({ lease: '30m0s', lease_max: '768h0m0s' });
  });

  test('iam_user: a user with the role\'s policies, groups and tags whose key works; renewable lease; revoke deletes everything', async () => {
    expect((await call('POST', 'cloud/config/lease', { lease: '30m', lease_max: '768h' })).status).toBe(204);
    emulator.state.createGroup('devs');
    await writeRole('app', { credential_type: 'iam_user', policy_document: JSON.stringify(POLICY, null, 2), policy_arns: [READ_ONLY], iam_groups: 'devs', iam_tags: ['team=payments'], user_path: '/svc/' });
    const role = await call('GET', 'cloud/roles/app');
    expect(role.body.data).toMatchObject({ credential_type: 'iam_user', credential_types: ['iam_user'], policy_document: JSON.stringify(POLICY), policy_arns: [READ_ONLY], iam_groups: ['devs'], iam_tags: { team: 'payments' }, user_path: '/svc/' });

    const creds = await issue('GET', 'cloud/creds/app');
    expect(creds).toMatchObject({ status: 200, securityToken: null, leaseDuration: 1800, renewable: true });
    expect(creds.leaseId).toMatch(/^cloud\/creds\/app\//);
    expect(await callerOfIssued(creds)).toBe(creds.arn);
    const username = userOfArn(creds.arn);
    expect(username).toMatch(/^svc-root-app-\d{10}-[A-Za-z0-9]{20}$/);
    const user = emulator.state.user(username);
    expect({ path: user.path, tags: user.tags, groups: [...user.groups], attached: [...user.attachedPolicies], inline: Object.fromEntries(user.inlinePolicies) }).toEqual({
      path: '/svc/',
      tags: { team: 'payments' },
      groups: ['devs'],
      attached: [READ_ONLY],
      inline: { app: JSON.stringify(POLICY) },
    });

    const renewed = await api(url, 'PUT', '/v1/sys/leases/renew', { token: rootToken, body: { lease_id: creds.leaseId, increment: 600 } });
    expect(renewed.body).toMatchObject({ lease_id: creds.leaseId, lease_duration: 600, renewable: true });

    // Someone gave the user console access: IAM refuses to delete it until the profile is gone.
    user.loginProfile = true;
    expect((await api(url, 'PUT', '/v1/sys/leases/revoke', { token: rootToken, body: { lease_id: creds.leaseId } })).status).toBe(204);
    expect(emulator.state.users.has(username)).toBe(false);
    expect(emulator.state.keysOf(username)).toEqual([]);
    expect(await callerOfIssued(creds)).toBe('InvalidClientTokenId');
  });

  test('an iam_user lease that expires deletes its user', async () => {
    await call('POST', 'cloud/config/lease', { lease: '2s', lease_max: '1h' });
    await writeRole('short', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const creds = await issue('GET', 'cloud/creds/short');
    await call('POST', 'cloud/config/lease', { lease: '30m', lease_max: '768h' });
    expect(creds.leaseDuration).toBe(2);
    const username = userOfArn(creds.arn);
    expect(emulator.state.users.has(username)).toBe(true);
    await eventually(async () => !emulator.state.users.has(username), 20_000);
    expect(emulator.state.keysOf(username)).toEqual([]);
  });

  test('assumed_role: STS credentials of the role that work, leased until they expire, not renewable', async () => {
    const reader = emulator.state.createRole('reader', 7200);
    const writer = emulator.state.createRole('writer');
    await writeRole('assume', { credential_type: 'assumed_role', role_arns: [reader.arn, writer.arn], default_sts_ttl: '20m', max_sts_ttl: '1h' });

    const refused = await issue('POST', 'cloud/sts/assume', {});
    expect(refused).toMatchObject({ status: 400, errors: ['field "role_arn": required, since the role has several role_arns'] });

    const creds = await issue('POST', 'cloud/sts/assume', { role_arn: reader.arn, role_session_name: 'alice smith/ops' });
    expect(creds).toMatchObject({ status: 200, renewable: false, arn: `arn:aws:sts::${ACCOUNT_ID}:assumed-role/reader/alice_smith_ops` });
    expectStsLease(creds, 1200);
    expect(creds.securityToken).toEqual(expect.any(String));
    expect(await callerOfIssued(creds)).toBe(creds.arn);
    const renew = await api(url, 'PUT', '/v1/sys/leases/renew', { token: rootToken, body: { lease_id: creds.leaseId } });
    expect(renew.status).toBe(400);

    // creds/ serves the same role; a generated session name is svc-<time>-<random>, 32 at most.
    const viaCreds = await issue('GET', `cloud/creds/assume?role_arn=${encodeURIComponent(writer.arn)}&ttl=15m`);
    expect(viaCreds).toMatchObject({ status: 200 });
    expectStsLease(viaCreds, 900);
    expect(userOfArn(viaCreds.arn)).toMatch(/^svc-\d{10}-[A-Za-z0-9]{17}$/);
    expect(await callerOfIssued(viaCreds)).toBe(viaCreds.arn);

    const tooLong = await issue('POST', 'cloud/sts/assume', { role_arn: reader.arn, ttl: '2h' });
    expect(tooLong.status).toBe(400);
    expect(tooLong.errors[0]).toMatch(/^field "ttl": 7200s is above the role's max_sts_ttl of 3600s/);
  });

  test("federation_token: the role's policy merged with its groups' becomes the session filter", async () => {
    const group = emulator.state.createGroup('auditors');
    group.inlinePolicies.set('audit', JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'cloudtrail:LookupEvents', Resource: '*' }] }));
    group.attachedPolicies.add(READ_ONLY);
    await writeRole('fed', { credential_type: 'federation_token', policy_document: JSON.stringify(POLICY), iam_groups: ['auditors'] });
    const creds = await issue('POST', 'cloud/sts/fed', { ttl: 900 });
    expect(creds).toMatchObject({ status: 200, renewable: false });
    expectStsLease(creds, 900);
    expect(creds.arn).toMatch(new RegExp(`^arn:aws:sts::${ACCOUNT_ID}:federated-user/svc-\\d{10}-`));
    expect(await callerOfIssued(creds)).toBe(creds.arn);
    const session = emulator.state.sessions.get(creds.accessKey)!;
    expect(JSON.parse(session.policy!)).toEqual({ Version: '2012-10-17', Statement: [POLICY.Statement[0], { Effect: 'Allow', Action: 'cloudtrail:LookupEvents', Resource: '*' }] });
    expect(session.policyArns).toEqual([READ_ONLY]);
  });

  test('a role with several types: creds/ gives an IAM user, sts/ a federation token; legacy roles keep to their path', async () => {
    await writeRole('both', { credential_type: 'iam_user,federation_token', policy_arns: [READ_ONLY] });
    const user = await issue('GET', 'cloud/creds/both');
    expect(user).toMatchObject({ status: 200, securityToken: null, renewable: true });
    const token = await issue('GET', 'cloud/sts/both');
    expect(token.arn).toMatch(/:federated-user\//);
    expect((await call('PUT', 'sys/leases/revoke', { lease_id: user.leaseId })).status).toBe(204);

    await writeRole('legacy-user', { policy: JSON.stringify(POLICY) });
    expect((await call('GET', 'cloud/roles/legacy-user')).body.data).toMatchObject({ credential_types: ['iam_user'], policy_document: JSON.stringify(POLICY) });
    const legacyUser = await issue('GET', 'cloud/creds/legacy-user');
    expect(await callerOfIssued(legacyUser)).toBe(legacyUser.arn);
    expect((await call('PUT', 'sys/leases/revoke', { lease_id: legacyUser.leaseId })).status).toBe(204);
    expect((await issue('GET', 'cloud/sts/legacy-user')).status).toBe(400);

    const legacyRole = emulator.state.createRole('legacy-target');
    await writeRole('legacy-role', { arn: legacyRole.arn });
    const assumed = await issue('GET', 'cloud/sts/legacy-role');
    expect(assumed.arn).toMatch(/:assumed-role\/legacy-target\//);
    expect((await issue('GET', 'cloud/creds/legacy-role')).status).toBe(400);
    expect((await call('DELETE', 'cloud/roles/legacy-role')).status).toBe(204);
    expect((await call('GET', 'cloud/roles/legacy-role')).status).toBe(404);
  });

  test('a failure midway rolls the half-created user back: a refusal is a 400 with the provider message, a server fault a 502', async () => {
    await writeRole('tagged', { credential_type: 'iam_user', policy_arns: [READ_ONLY], iam_tags: { env: 'test' } });
    const before = managedUsers();
    emulator.failNext('TagUser', { status: 400, code: 'InvalidInput', message: 'tag value rejected' });
    const refused = await issue('GET', 'cloud/creds/tagged');
    expect(refused).toMatchObject({ status: 400, errors: ['create user: InvalidInput: tag value rejected'] });
    expect(managedUsers()).toEqual(before);

    emulator.failNext('CreateAccessKey', { status: 503, code: 'ServiceUnavailable', message: 'IAM is busy' }, 2);
    const faulted = await issue('GET', 'cloud/creds/tagged');
    expect(faulted.status).toBe(502);
    expect(faulted.errors[0]).toMatch(/^create user failed \(the provider answered 503\): ServiceUnavailable: IAM is busy/);
    expect(managedUsers()).toEqual(before);
  });

  test('rotate-root: a new root key works, the old one stops working; a second key of the root user is refused', async () => {
    const rotated = await call('POST', 'cloud/config/rotate-root');
    expect(rotated.status).toBe(200);
    const newKey = String(rotated.body.data.access_key);
    expect(newKey).not.toBe(rootKey.id);
    expect(rotated.text).not.toContain(emulator.state.accessKeys.get(newKey)!.secret);
    expect(await callerOfIssued({ accessKey: rootKey.id, secretKey: rootKey.secret, securityToken: null })).toBe('InvalidClientTokenId');
    expect(emulator.state.keysOf('svc-root').map((key) => key.id)).toEqual([newKey]);
    rootKey = { id: newKey, secret: emulator.state.accessKeys.get(newKey)!.secret };
    secrets.add(rootKey.secret);
    expect((await call('GET', 'cloud/config/root')).body.data.access_key).toBe(newKey);
    // The engine goes on with the new key.
    const creds = await issue('GET', 'cloud/creds/app');
    expect(await callerOfIssued(creds)).toBe(creds.arn);
    expect((await call('PUT', 'sys/leases/revoke', { lease_id: creds.leaseId })).status).toBe(204);

    const extra = emulator.state.createAccessKey('svc-root');
    const refused = await call('POST', 'cloud/config/rotate-root');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/LimitExceeded: Cannot exceed quota for AccessKeysPerUser: 2/);
    emulator.state.deleteAccessKey('svc-root', extra.id);
  });

  test('static roles: creation rotates the oldest of two keys; static-creds answer a working key; a new period counts from now', async () => {
    const name = `static-${randomBytes(3).toString('hex')}`;
    emulator.state.createUser(name);
    const oldest = emulator.state.createAccessKey(name);
    await new Promise((resolve) => setImmediate(resolve));
    const newer = emulator.state.createAccessKey(name);
    newer.createDate = new Date(oldest.createDate.getTime() + 1000);

    expect((await call('POST', `cloud/static-roles/${name}`, { username: name, rotation_period: '24h' })).status).toBe(204);
    const keys = emulator.state.keysOf(name).map((key) => key.id);
    expect(keys).toHaveLength(2);
    expect(keys).not.toContain(oldest.id);
    expect(keys).toContain(newer.id);

    const staticCreds = await call('GET', `cloud/static-creds/${name}`);
    secrets.add(String(staticCreds.body.data.secret_key));
    const current = { accessKey: String(staticCreds.body.data.access_key), secretKey: String(staticCreds.body.data.secret_key), securityToken: null };
    expect(keys).toContain(current.accessKey);
    expect(await callerOfIssued(current)).toBe(emulator.state.user(name).arn);
    expect((await call('GET', `cloud/static-roles/${name}`)).body.data).toEqual({ name, username: name, rotation_period: 86400 });
    expect((await call('LIST', 'cloud/static-roles')).body.data.keys).toContain(name);

    expect((await call('POST', `cloud/static-roles/${name}`, { rotation_period: 3600 })).body?.errors).toBeUndefined();
    expect((await call('GET', `cloud/static-roles/${name}`)).body.data.rotation_period).toBe(3600);
    expect((await call('POST', `cloud/static-roles/${name}`, { rotation_period: '30s' })).body.errors).toEqual(['field "rotation_period": must be at least 1 minute']);

    expect((await call('DELETE', `cloud/static-roles/${name}`)).status).toBe(204);
    expect(emulator.state.keysOf(name).map((key) => key.id)).toEqual([newer.id]);
    expect(emulator.state.users.has(name)).toBe(true);
    expect((await call('GET', `cloud/static-creds/${name}`)).status).toBe(404);
  });

  test('a generated username over 64 characters is a 500 naming the limit; nothing is created', async () => {
    expect((await call('POST', 'sys/mounts/cloud-long', { type: 'cloud' })).status).toBe(204);
    await configureRoot({ username_template: 'svc-{{ .PolicyName }}-{{ random 60 }}' }, 'cloud-long');
    expect((await call('POST', 'cloud-long/roles/r', { credential_type: 'iam_user', policy_arns: READ_ONLY })).status).toBe(204);
    const before = managedUsers();
    const refused = await issue('GET', 'cloud-long/creds/r');
    expect(refused.status).toBe(500);
    expect(refused.errors[0]).toMatch(/^the generated username "svc-r-[A-Za-z0-9]{60}" is longer than 64 characters$/);
    expect(managedUsers()).toEqual(before);
  });

  test('bad input is a 400 naming the field', async () => {
    const role = (body: Record<string, unknown>) => call('POST', 'cloud/roles/bad', body);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ credential_type: 'root_user', policy_arns: READ_ONLY }, /^field "credential_type": unknown credential type "root_user"/],
      [{ credential_type: 'iam_user', policy_arns: READ_ONLY, role_arns: `arn:aws:iam::${ACCOUNT_ID}:role/reader` }, /^field "role_arns": only allowed with credential_type assumed_role/],
      [{ credential_type: 'iam_user', policy: JSON.stringify(POLICY) }, /^the legacy fields "policy" and "arn" cannot be mixed with "credential_type"/],
      [{ credential_type: 'iam_user', policy_document: '{"Version": ' }, /^field "policy_document": not a valid JSON policy document/],
      [{ credential_type: 'assumed_role' }, /^field "role_arns": required for credential_type assumed_role/],
      [{ credential_type: 'federation_token' }, /^fields "policy_arns" and "policy_document"/],
      [{ credential_type: 'iam_user', policy_arns: READ_ONLY, max_sts_ttl: '1h' }, /^field "max_sts_ttl": only allowed with credential_type assumed_role or federation_token/],
      [{ credential_type: 'iam_user', policy_arns: READ_ONLY, user_path: 'no-slashes' }, /^field "user_path"/],
      [{ credential_type: 'federation_token', policy_arns: READ_ONLY, default_sts_ttl: '2h', max_sts_ttl: '1h' }, /^field "default_sts_ttl": cannot be greater than max_sts_ttl/],
      [{ policy: '{bad' }, /^field "policy": not a valid JSON policy document/],
    ];
    for (const [body, message] of cases) {
      const res = await role(body);
      expect([body, res.status]).toEqual([body, 400]);
      expect([body, res.body.errors[0]]).toEqual([body, expect.stringMatching(message)]);
    }
    expect((await call('GET', 'cloud/roles/bad')).status).toBe(404);
    expect((await call('DELETE', 'cloud/roles/bad')).status).toBe(404);
    expect((await call('GET', 'cloud/creds/bad')).body.errors).toEqual(['unknown role "bad"']);
    expect((await call('POST', 'cloud/static-roles/nobody', { username: 'no-such-user', rotation_period: '1h' })).body.errors[0]).toMatch(/NoSuchEntity: The user with name no-such-user cannot be found/);
    expect((await call('POST', 'cloud/config/root', { access_key: 'AKIA0000', iam_endpoint: 'not a url' })).status).toBe(400);
    expect((await call('POST', 'cloud/config/root', { username_template: '{{ .Nope }}' })).body.errors).toEqual(['field "username_template": unknown value ".Nope"']);
    expect((await call('LIST', 'cloud/roles')).body.data.keys).toEqual(expect.arrayContaining(['app', 'assume', 'fed']));
  });

  test('a provider that is gone: 502 within seconds, and nothing is written', async () => {
    expect((await call('POST', 'sys/mounts/cloud-down', { type: 'cloud' })).status).toBe(204);
    const port = await closedPort();
    await configureRoot({ iam_endpoint: `http://127.0.0.1:${port}`, sts_endpoint: `http://127.0.0.1:${port}` }, 'cloud-down');
    expect((await call('POST', 'cloud-down/roles/r', { credential_type: 'iam_user,federation_token', policy_arns: READ_ONLY })).status).toBe(204);
    const before = managedUsers();
    for (const path of ['cloud-down/creds/r', 'cloud-down/sts/r']) {
      const started = Date.now();
      const res = await issue('GET', path);
      expect([path, res.status]).toEqual([path, 502]);
      expect(res.errors[0]).toMatch(/the provider did not answer/);
      expect(res.errors[0]).not.toContain(rootKey.secret);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    expect(managedUsers()).toEqual(before);
  });

  test('a provider that accepts and never answers: 502 naming the silent endpoint within the deadline, while another mount is served', async () => {
    const silent = await startSilentListener();
    try {
      expect((await call('POST', 'sys/mounts/cloud-silent', { type: 'cloud' })).status).toBe(204);
      await configureRoot({ iam_endpoint: silent.url, sts_endpoint: silent.url, max_retries: 0 }, 'cloud-silent');
      const roles = {
        user: { credential_type: 'iam_user', policy_arns: READ_ONLY },
        fed: { credential_type: 'federation_token', policy_arns: READ_ONLY },
        assume: { credential_type: 'assumed_role', role_arns: `arn:aws:iam::${ACCOUNT_ID}:role/anything` },
      };
      for (const [name, body] of Object.entries(roles)) expect((await call('POST', `cloud-silent/roles/${name}`, body)).status).toBe(204);
      const started = Date.now();
      const hung = Object.entries({ user: 'IAM', fed: 'STS', assume: 'STS' }).map(async ([name, endpoint]) => ({ name, endpoint, res: await issue('GET', `cloud-silent/creds/${name}`), after: Date.now() - started }));
      // The healthy mount answers while the silent one's requests wait on their provider.
      const healthy = await issue('POST', 'cloud/sts/fed', { ttl: 900 });
      expect(healthy.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(ANSWER_TIMEOUT_MS);
      for (const { name, endpoint, res, after } of await Promise.all(hung)) {
        expect([name, res.status]).toEqual([name, 502]);
        expect([name, res.errors[0]]).toEqual([name, expect.stringMatching(new RegExp(`the provider did not answer\\): ${endpoint} endpoint: TimeoutError`))]);
        expect(res.errors[0]).not.toContain(rootKey.secret);
        // One attempt (max_retries 0), no rollback waited for: one deadline, with room for a loaded machine.
        expect([name, after < 2 * ANSWER_TIMEOUT_MS]).toEqual([name, true]);
      }
      expect(silent.accepted()).toBeGreaterThanOrEqual(3);
    } finally {
      await silent.close();
    }
  });

  test('no secret key or session token the engine handled appears in any log line', () => {
    expect(secrets.size).toBeGreaterThan(10);
    for (const process of topology.processes) {
      const leaked = process.logs.filter((line) => [...secrets].some((secret) => line.includes(secret)));
      expect([process.name, leaked]).toEqual([process.name, []]);
    }
  });

  if (kind === 'distributed') {
    test('with the cloud service stopped, creds answer 503 naming the service at once', async () => {
      await topology.stopProcess('cloud');
      const creds = await issue('GET', 'cloud/creds/app');
      expect(creds.status).toBe(503);
      expect(creds.errors[0]).toMatch(/^service "cloud" is unavailable/);
      expect((await call('GET', 'sys/mounts')).status).toBe(200);
    });
  }
});
