/**
 * The cloud auth method through the gateway, in both topologies (distributed: the method is its own
 * `auth-cloud` process on NATS, answering logins and renewals over the bus), against the IAM + STS
 * emulator, which checks every forwarded GetCallerIdentity as STS does (signature with the signed
 * Host, region scope, clock skew). Logins are signed as `svc login -method=cloud` signs them
 * (`cloudIamLoginData` of the SDK), with keys the emulator issued.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import 'reflect-metadata';
import { X509Certificate, X509CertificateGenerator } from '@peculiar/x509';
import { cloudIamLoginData, type CloudCredentials, type CloudIamLoginData } from '@svc/sdk';
import { ANSWER_TIMEOUT_MS } from '@svc/cloud-provider';
import { api, assertingCalls, closedPort, eventually, initAndUnseal, runCli, startSilentListener, startTopology, type ApiResponse, type Topology, type TopologyKind } from '@svc/testing';
import { startEc2Emulator, type Ec2Emulator, type Instance } from './emulators/aws/ec2';
import { ACCOUNT_ID, startIamStsEmulator, type IamStsEmulator } from './emulators/aws/iam-sts';

const SERVER_ID = 'svc.example.com';

describe.each<TopologyKind>(['all-in-one', 'distributed'])('cloud auth method, %s', (kind) => {
  let topology: Topology;
  let url: string;
  let root: string;
  let sts: IamStsEmulator;
  /** The same account's STS in another region, reached through AWS_ENDPOINT_URL_STS (use_sts_region_from_client). */
  let westSts: IamStsEmulator;
  let ec2: Ec2Emulator;
  let methodKey: { accessKeyId: string; secretAccessKey: string };
  let alice: CloudCredentials;
  let aliceId: string;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-auth-cloud-'));
  const savedEndpoint = process.env.AWS_ENDPOINT_URL_STS;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = (method: string, where: string, body?: unknown, token: string | undefined = root): Promise<ApiResponse<Record<string, any>>> =>
    api(url, method, `/v1/${where}`, { token, body });
  const { ok, refused } = assertingCalls(call);
  const anonymous = assertingCalls((method, where, body) => call(method, where, body, undefined));

  function userKey(name: string, userPath = '/'): CloudCredentials & { userId: string } {
    const user = sts.state.createUser(name, { path: userPath });
    const key = sts.state.createAccessKey(name);
    return { accessKeyId: key.id, secretAccessKey: key.secret, userId: user.id };
  }

  function assumedRole(roleName: string, session: string): CloudCredentials {
    const role = sts.state.roles.get(roleName)!;
    const issued = sts.state.issueSession(`arn:aws:sts::${ACCOUNT_ID}:assumed-role/${role.name}/${session}`, `${role.id}:${session}`, 3600);
    return { accessKeyId: issued.id, secretAccessKey: issued.secret, sessionToken: issued.token };
  }

  async function configureClient(fields: Record<string, unknown> = {}): Promise<void> {
    await ok('POST', 'auth/cloud/config/client', {
      access_key: methodKey.accessKeyId,
      secret_key: methodKey.secretAccessKey,
      endpoint: ec2.url,
      iam_endpoint: sts.url,
      sts_endpoint: sts.url,
      sts_region: 'us-east-1',
      iam_server_id_header_value: '',
      use_sts_region_from_client: false,
      max_retries: 0,
      ...fields,
    });
  }

  const signed = (credentials: CloudCredentials, options: { region?: string; serverId?: string; signingDate?: Date } = {}): Promise<CloudIamLoginData> =>
    cloudIamLoginData({ credentials, ...options });

  async function login(credentials: CloudCredentials, role?: string, options: { region?: string; serverId?: string } = {}) {
    return call('POST', 'auth/cloud/login', { ...(await signed(credentials, options)), ...(role ? { role } : {}) }, undefined);
  }

  async function loggedIn(credentials: CloudCredentials, role?: string, options: { region?: string; serverId?: string } = {}) {
    const res = await login(credentials, role, options);
    expect([res.status, res.text]).toEqual([200, expect.any(String)]);
    return res.body.auth as { client_token: string; accessor: string; policies: string[]; metadata: Record<string, string>; entity_id: string; renewable: boolean };
  }

  beforeAll(async () => {
    sts = await startIamStsEmulator();
    westSts = await startIamStsEmulator({ region: 'us-west-2', state: sts.state });
    ec2 = await startEc2Emulator(sts.state);
    process.env.AWS_ENDPOINT_URL_STS = westSts.url;
    topology = await startTopology(kind, { services: ['auth-cloud'] });
    url = topology.urls[0];
    ({ rootToken: root } = await initAndUnseal(url));
    await ok('POST', 'sys/auth/cloud', { type: 'cloud' });
    await ok('PUT', 'sys/policies/acl/dev', { policy: 'path "secret/*" { capabilities = ["read"] }\npath "auth/token/create" { capabilities = ["update"] }' });
    sts.state.createUser('svc-auth');
    const key = sts.state.createAccessKey('svc-auth');
    methodKey = { accessKeyId: key.id, secretAccessKey: key.secret };
    await configureClient();
    const aliceKey = userKey('alice', '/engineering/');
    alice = aliceKey;
    aliceId = aliceKey.userId;
    sts.state.createRole('builder', 3600, '/ci/');
    await ok('POST', 'auth/cloud/role/dev', { auth_type: 'iam', bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, token_policies: 'dev', token_ttl: '1h' });
  }, 120_000);

  afterAll(async () => {
    if (savedEndpoint === undefined) delete process.env.AWS_ENDPOINT_URL_STS;
    else process.env.AWS_ENDPOINT_URL_STS = savedEndpoint;
    await topology?.stop();
    await sts?.close();
    await westSts?.close();
    await ec2?.close();
  });

  test('sys/auth enables type cloud, answered by its service', async () => {
    expect((await ok('GET', 'sys/auth')).data['cloud/']).toMatchObject({ type: 'cloud' });
    expect((await ok('GET', 'sys/mounts')).data['cloud/']).toBeUndefined();
  });

  describe('configuration', () => {
    test('config/client reads back every field but the secret key; bad input is a 400 naming the field', async () => {
      const { data } = await ok('GET', 'auth/cloud/config/client');
      expect(data).toEqual({
        access_key: methodKey.accessKeyId,
        endpoint: ec2.url,
        iam_endpoint: sts.url,
        sts_endpoint: sts.url,
        sts_region: 'us-east-1',
        use_sts_region_from_client: false,
        iam_server_id_header_value: '',
        allowed_sts_header_values: [],
        max_retries: 0,
      });
      await refused('POST', 'auth/cloud/config/client', { sts_endpoint: 'not a url' }, 400, /field "sts_endpoint": "not a url" is not a URL/);
      await refused('POST', 'auth/cloud/config/client', { max_retries: -2 }, 400, /field "max_retries"/);
      await refused('POST', 'auth/cloud/config/client', { access_key: 'AKIAONLY', secret_key: '' }, 400, /"access_key" and "secret_key" go together/);
      await refused('POST', 'auth/cloud/config/client', { max_retries: 'many' }, 400, /field "max_retries"/);
    });

    test('config/identity takes the documented aliases and metadata, "default" restores the default set', async () => {
      expect((await ok('GET', 'auth/cloud/config/identity')).data).toEqual({ iam_alias: 'role_id', iam_metadata: ['account_id', 'auth_type'], vm_alias: 'role_id', vm_metadata: ['account_id', 'auth_type'] });
      await ok('POST', 'auth/cloud/config/identity', { iam_metadata: ['client_arn', 'canonical_arn'], vm_alias: 'instance_id' });
      expect((await ok('GET', 'auth/cloud/config/identity')).data).toMatchObject({ iam_metadata: ['client_arn', 'canonical_arn'], vm_alias: 'instance_id' });
      await ok('POST', 'auth/cloud/config/identity', { iam_metadata: 'default', vm_alias: 'role_id' });
      expect((await ok('GET', 'auth/cloud/config/identity')).data).toMatchObject({ iam_metadata: ['account_id', 'auth_type'], vm_alias: 'role_id' });
      await refused('POST', 'auth/cloud/config/identity', { iam_alias: 'nickname' }, 400, /field "iam_alias"/);
      await refused('POST', 'auth/cloud/config/identity', { iam_metadata: ['client_arn', 'shoe_size'] }, 400, /field "iam_metadata": unknown field\(s\) "shoe_size"/);
      await refused('POST', 'auth/cloud/config/identity', { vm_metadata: ['default', 'region'] }, 400, /field "vm_metadata": "default" cannot be combined/);
    });

    test('certificates are stored as PEM, listed and deleted; a non-certificate is refused', async () => {
      const keys = await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
      const cert = await X509CertificateGenerator.createSelfSigned({ serialNumber: '01', name: 'CN=test provider', notBefore: new Date(), notAfter: new Date(Date.now() + 86_400_000), keys, signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' } });
      const der = Buffer.from(cert.rawData).toString('base64');
      await ok('POST', 'auth/cloud/config/certificate/test-provider', { cloud_public_cert: der, type: 'identity' });
      const read = (await ok('GET', 'auth/cloud/config/certificate/test-provider')).data;
      expect(read.type).toBe('identity');
      expect(new X509Certificate(read.cloud_public_cert as string).subject).toBe('CN=test provider');
      expect((await ok('LIST', 'auth/cloud/config/certificates')).data.keys).toEqual(['test-provider']);
      await refused('POST', 'auth/cloud/config/certificate/broken', { cloud_public_cert: 'bm90IGEgY2VydA==' }, 400, /field "cloud_public_cert"/);
      await refused('POST', 'auth/cloud/config/certificate/broken', { cloud_public_cert: der, type: 'x509' }, 400, /field "type"/);
      await ok('DELETE', 'auth/cloud/config/certificate/test-provider');
      expect((await call('GET', 'auth/cloud/config/certificate/test-provider')).status).toBe(404);
    });

    test('config/sts associates a role ARN with an account id', async () => {
      await ok('POST', `auth/cloud/config/sts/${ACCOUNT_ID}`, { sts_role: `arn:aws:iam::${ACCOUNT_ID}:role/lookup` });
      expect((await ok('GET', `auth/cloud/config/sts/${ACCOUNT_ID}`)).data).toEqual({ sts_role: `arn:aws:iam::${ACCOUNT_ID}:role/lookup` });
      expect((await ok('LIST', 'auth/cloud/config/sts')).data.keys).toEqual([ACCOUNT_ID]);
      await refused('POST', 'auth/cloud/config/sts/12345', { sts_role: `arn:aws:iam::${ACCOUNT_ID}:role/lookup` }, 400, /field "account_id"/);
      await refused('POST', `auth/cloud/config/sts/${ACCOUNT_ID}`, { sts_role: 'lookup' }, 400, /field "sts_role"/);
      await refused('POST', `auth/cloud/config/sts/${ACCOUNT_ID}`, {}, 400, /missing required field "sts_role"/);
      await ok('DELETE', `auth/cloud/config/sts/${ACCOUNT_ID}`);
      expect((await call('LIST', 'auth/cloud/config/sts')).status).toBe(404);
    });

    test('tidy settings default to 72h and read back as seconds', async () => {
      await ok('POST', 'auth/cloud/config/tidy/identity-accesslist', { disable_periodic_tidy: true });
      expect((await ok('GET', 'auth/cloud/config/tidy/identity-accesslist')).data).toEqual({ safety_buffer: 259200, disable_periodic_tidy: true });
      await ok('POST', 'auth/cloud/config/tidy/roletag-denylist', { safety_buffer: '1h' });
      expect((await ok('GET', 'auth/cloud/config/tidy/roletag-blacklist')).data).toEqual({ safety_buffer: 3600, disable_periodic_tidy: false });
      await refused('POST', 'auth/cloud/config/tidy/roletag-denylist', { safety_buffer: 'soon' }, 400, /field "safety_buffer"/);
      await ok('DELETE', 'auth/cloud/config/tidy/identity-accesslist');
      expect((await call('GET', 'auth/cloud/config/tidy/identity-accesslist')).status).toBe(404);
    });
  });

  describe('roles', () => {
    test('a role reads back every field, its name lower-cased, the principal resolved to its unique id', async () => {
      await ok('POST', 'auth/cloud/role/Mixed-Case', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, token_policies: 'Dev', token_max_ttl: '2h' });
      const { data } = await ok('GET', 'auth/cloud/role/mixed-case');
      expect(data).toMatchObject({
        auth_type: 'iam',
        bound_iam_principal_arn: [`arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`],
        bound_iam_principal_id: [aliceId],
        bound_image_id: [],
        bound_account_id: [],
        bound_region: [],
        bound_vpc_id: [],
        bound_subnet_id: [],
        bound_iam_role_arn: [],
        bound_iam_instance_profile_arn: [],
        bound_vm_instance_id: [],
        role_tag: '',
        inferred_entity_type: '',
        inferred_cloud_region: '',
        resolve_cloud_unique_ids: true,
        allow_instance_migration: false,
        disallow_reauthentication: false,
        role_id: expect.any(String),
        token_policies: ['dev'],
        policies: ['dev'],
        token_max_ttl: 7200,
        token_ttl: 0,
        token_type: 'default',
      });
      expect((await ok('LIST', 'auth/cloud/role')).data.keys).toEqual(['dev', 'mixed-case']);
      expect((await ok('LIST', 'auth/cloud/roles')).data.keys).toEqual(['dev', 'mixed-case']);
      await ok('DELETE', 'auth/cloud/role/MIXED-case');
      expect((await call('GET', 'auth/cloud/role/mixed-case')).status).toBe(404);
    });

    test("Document 2's role rules: a constraint, only those the type checks, and the pairwise rules", async () => {
      await refused('POST', 'auth/cloud/role/none', { token_policies: 'dev' }, 400, /at least one bound parameter/);
      await refused('POST', 'auth/cloud/role/tagged', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/x`, role_tag: 'VaultRole' }, 400, /field "role_tag": only for auth_type vm/);
      await refused('POST', 'auth/cloud/role/images', { bound_image_id: 'ami-1' }, 400, /field "bound_image_id": only for auth_type vm, or iam with inferred_entity_type/);
      await refused('POST', 'auth/cloud/role/vmarn', { auth_type: 'vm', bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/x` }, 400, /field "bound_iam_principal_arn": only for auth_type iam/);
      await refused('POST', 'auth/cloud/role/both', { auth_type: 'vm', bound_image_id: 'ami-1', allow_instance_migration: true, disallow_reauthentication: true }, 400, /cannot both be true/);
      await refused('POST', 'auth/cloud/role/migrate', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/x`, allow_instance_migration: true }, 400, /field "allow_instance_migration": only for auth_type vm/);
      await refused('POST', 'auth/cloud/role/infer', { bound_image_id: 'ami-1', inferred_entity_type: 'vm_instance' }, 400, /field "inferred_cloud_region": required/);
      await refused('POST', 'auth/cloud/role/infer', { bound_image_id: 'ami-1', inferred_entity_type: 'lambda', inferred_cloud_region: 'us-east-1' }, 400, /field "inferred_entity_type"/);
      await refused('POST', 'auth/cloud/role/kind', { auth_type: 'ec2', bound_image_id: 'ami-1' }, 400, /field "auth_type"/);
      await refused('POST', 'auth/cloud/role/pathed', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:role/ci/builder`, resolve_cloud_unique_ids: false }, 400, /role ARNs must omit the path/);
      await refused('POST', 'auth/cloud/role/ghost', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/nobody` }, 400, /NoSuchEntity/);
      await ok('POST', 'auth/cloud/role/vm-role', { auth_type: 'vm', bound_image_id: 'ami-1,ami-2' });
      expect((await ok('GET', 'auth/cloud/role/vm-role')).data.bound_image_id).toEqual(['ami-1', 'ami-2']);
      await refused('POST', 'auth/cloud/role/vm-role', { auth_type: 'iam' }, 400, /field "auth_type": cannot change/);
      await refused('POST', 'auth/cloud/role/dev', { resolve_cloud_unique_ids: false }, 400, /cannot be changed from true to false/);
      await ok('DELETE', 'auth/cloud/role/vm-role');
    });
  });

  describe('iam login', () => {
    test('as a user bound by ARN: a token with the role\'s policies and TTL, an entity, and child tokens carry the entity', async () => {
      const auth = await loggedIn(alice, 'dev');
      expect(auth).toMatchObject({ policies: ['dev', 'default'], renewable: true, entity_id: expect.any(String) });
      expect(auth.metadata).toMatchObject({ client_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, canonical_arn: `arn:aws:iam::${ACCOUNT_ID}:user/alice`, client_user_id: aliceId, account_id: ACCOUNT_ID, auth_type: 'iam' });
      const self = (await ok('GET', 'auth/token/lookup-self', undefined, auth.client_token)).data;
      expect(self).toMatchObject({ display_name: 'cloud-alice', path: 'auth/cloud/login', entity_id: auth.entity_id, ttl: expect.any(Number) });
      expect(self.ttl).toBeLessThanOrEqual(3600);
      const child = (await ok('POST', 'auth/token/create', { policies: ['dev'] }, auth.client_token)).auth;
      expect((await ok('GET', 'auth/token/lookup-self', undefined, child.client_token)).data.entity_id).toBe(auth.entity_id);
    });

    test('the role defaults to the caller\'s friendly name', async () => {
      const bob = userKey('bob');
      await ok('POST', 'auth/cloud/role/bob', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/bob` });
      expect((await loggedIn(bob)).metadata.client_arn).toBe(`arn:aws:iam::${ACCOUNT_ID}:user/bob`);
    });

    test('as an assumed role: bound by its role ARN, and by a trailing wildcard over the role\'s path', async () => {
      await ok('POST', 'auth/cloud/role/builder', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:role/ci/builder`, token_policies: 'dev' });
      const session = assumedRole('builder', 'job-17');
      const auth = await loggedIn(session, 'builder');
      expect(auth.metadata).toMatchObject({ client_arn: `arn:aws:sts::${ACCOUNT_ID}:assumed-role/builder/job-17`, canonical_arn: `arn:aws:iam::${ACCOUNT_ID}:role/builder` });
      expect((await ok('GET', 'auth/token/lookup-self', undefined, auth.client_token)).data.display_name).toBe('cloud-builder/job-17');

      await ok('POST', 'auth/cloud/role/ci-any', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:role/ci/*` });
      await loggedIn(session, 'ci-any');
      await ok('POST', 'auth/cloud/role/ops-any', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:role/ops/*` });
      const outside = await login(session, 'ops-any');
      expect([outside.status, outside.body.errors]).toEqual([403, [`IAM principal "arn:aws:sts::${ACCOUNT_ID}:assumed-role/builder/job-17" does not belong to the role "ops-any"`]]);
    });

    test('a wildcard over users\' paths, and a principal the role does not bind', async () => {
      await ok('POST', 'auth/cloud/role/engineers', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/*` });
      await loggedIn(alice, 'engineers');
      const carol = userKey('carol', '/sales/');
      expect((await login(carol, 'engineers')).status).toBe(403);
      expect((await login(carol, 'dev')).status).toBe(403);
      const missing = await login(alice, 'nope');
      expect([missing.status, missing.body.errors]).toEqual([400, ['entry for role "nope" not found']]);
    });

    test('the server id header: required when configured, with the configured value, and signed', async () => {
      await configureClient({ iam_server_id_header_value: SERVER_ID });
      try {
        await loggedIn(alice, 'dev', { serverId: SERVER_ID });
        const without = await login(alice, 'dev');
        expect([without.status, without.body.errors]).toEqual([400, ['missing header "X-Service-Cloud-IAM-Server-ID"']]);
        const wrong = await login(alice, 'dev', { serverId: 'elsewhere.example.com' });
        expect([wrong.status, wrong.body.errors]).toEqual([400, [`header "X-Service-Cloud-IAM-Server-ID": expected "${SERVER_ID}", got "elsewhere.example.com"`]]);
        // Added after signing: STS would never see it, so it proves nothing about who the server is.
        const data = await signed(alice);
        const headers = JSON.parse(Buffer.from(data.iam_request_headers, 'base64').toString('utf8')) as Record<string, string[]>;
        const unsigned = { ...data, role: 'dev', iam_request_headers: { ...headers, 'X-Service-Cloud-IAM-Server-ID': [SERVER_ID] } };
        await anonymous.refused('POST', 'auth/cloud/login', unsigned, 400, /"X-Service-Cloud-IAM-Server-ID" is not among the signed headers/);
      } finally {
        await configureClient();
      }
    });

    test('only an unaltered sts:GetCallerIdentity is accepted', async () => {
      const data = await signed(alice);
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_body: b64('Action=GetSessionToken&Version=2011-06-15') }, 400, /field "iam_request_body": must be exactly Action=GetCallerIdentity/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_body: b64('Action=GetCallerIdentity&Version=2011-06-15&Extra=1') }, 400, /field "iam_request_body"/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_url: b64('https://sts.amazonaws.com/?Action=GetCallerIdentity') }, 400, /field "iam_request_url": must be the STS endpoint's root, without a query/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_http_request_method: 'GET' }, 400, /field "iam_http_request_method": must be POST/);
      const headers = JSON.parse(Buffer.from(data.iam_request_headers, 'base64').toString('utf8')) as Record<string, string[]>;
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_headers: { ...headers, 'X-Forwarded-For': ['10.0.0.1'] } }, 400, /header\(s\) not allowed: x-forwarded-for/);
      // A changed body under the same signature: STS refuses it.
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_body: b64('Version=2011-06-15&Action=GetCallerIdentity') }, 400, /STS answered 403: SignatureDoesNotMatch/);
    });

    test('allowed_sts_header_values lets the named extra headers through', async () => {
      await configureClient({ allowed_sts_header_values: 'X-Forwarded-For' });
      try {
        const data = await signed(alice);
        const headers = JSON.parse(Buffer.from(data.iam_request_headers, 'base64').toString('utf8')) as Record<string, string[]>;
        await anonymous.ok('POST', 'auth/cloud/login', { ...data, role: 'dev', iam_request_headers: { ...headers, 'X-Forwarded-For': ['10.0.0.1'] } });
      } finally {
        await configureClient();
      }
    });

    test('a request replayed after the skew window is refused by STS', async () => {
      const old = await signed(alice, { signingDate: new Date(Date.now() - 20 * 60_000) });
      await anonymous.refused('POST', 'auth/cloud/login', { ...old, role: 'dev' }, 400, /STS answered 403: RequestExpired/);
    });

    test('a request signed for another region: refused by the configured STS, accepted with use_sts_region_from_client', async () => {
      const west = await login(alice, 'dev', { region: 'us-west-2' });
      expect([west.status, west.body.errors]).toEqual([400, ["error making upstream request: STS answered 403: SignatureDoesNotMatch: Credential should be scoped to a valid region, not 'us-west-2'."]]);
      await configureClient({ use_sts_region_from_client: true });
      try {
        await loggedIn(alice, 'dev', { region: 'us-west-2' });
      } finally {
        await configureClient();
      }
    });

    test('bad input is a 400 naming the field', async () => {
      const data = await signed(alice);
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'dev' }, 400, /didn't supply required authentication values/);
      await anonymous.refused('POST', 'auth/cloud/login', { iam_request_url: data.iam_request_url }, 400, /some of the iam auth values are missing: "iam_http_request_method", "iam_request_body", "iam_request_headers"/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, pkcs7: 'MIAGCSqGSIb3DQEHAqCAMIACAQEx' }, 400, /supplied auth values for both iam .* and vm \(pkcs7\)/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_url: '%%%' }, 400, /field "iam_request_url": not base64/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_headers: 42 }, 400, /field "iam_request_headers"/);
      await anonymous.refused('POST', 'auth/cloud/login', { ...data, iam_request_headers: { host: ['sts.amazonaws.com'] } }, 400, /field "iam_request_headers": no SigV4 Authorization header/);
    });

    test('STS down or failing: 502', async () => {
      await configureClient({ sts_endpoint: `http://127.0.0.1:${await closedPort()}` });
      try {
        await anonymous.refused('POST', 'auth/cloud/login', { ...(await signed(alice)), role: 'dev' }, 502, /error making upstream request: STS did not answer/);
      } finally {
        await configureClient();
      }
      sts.failNext('GetCallerIdentity', { status: 503, code: 'ServiceUnavailable', message: 'busy' });
      await anonymous.refused('POST', 'auth/cloud/login', { ...(await signed(alice)), role: 'dev' }, 502, /STS answered 503/);
    });

    test('the alias and its metadata follow config/identity', async () => {
      const accessor = (await ok('GET', 'sys/auth')).data['cloud/'].accessor as string;
      const roleId = (await ok('GET', 'auth/cloud/role/dev')).data.role_id as string;
      const byRoleId = await loggedIn(alice, 'dev');
      const entity = (await ok('POST', 'identity/lookup/entity', { alias_name: roleId, alias_mount_accessor: accessor })).data;
      expect(entity.id).toBe(byRoleId.entity_id);
      expect(entity.aliases[0].metadata).toEqual({ account_id: ACCOUNT_ID, auth_type: 'iam' });

      await ok('POST', 'auth/cloud/config/identity', { iam_alias: 'unique_id', iam_metadata: ['client_arn', 'canonical_arn', 'client_user_id'] });
      try {
        const byUniqueId = await loggedIn(alice, 'dev');
        const aliased = (await ok('POST', 'identity/lookup/entity', { alias_name: aliceId, alias_mount_accessor: accessor })).data;
        expect(aliased.id).toBe(byUniqueId.entity_id);
        expect(aliased.aliases[0].metadata).toEqual({ client_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, canonical_arn: `arn:aws:iam::${ACCOUNT_ID}:user/alice`, client_user_id: aliceId });
        await ok('POST', 'auth/cloud/config/identity', { iam_alias: 'full_arn', iam_metadata: [] });
        const byArn = await loggedIn(alice, 'dev');
        const arnAliased = (await ok('POST', 'identity/lookup/entity', { alias_name: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, alias_mount_accessor: accessor })).data;
        expect([arnAliased.id, arnAliased.aliases[0].metadata]).toEqual([byArn.entity_id, {}]);
      } finally {
        await ok('POST', 'auth/cloud/config/identity', { iam_alias: 'role_id', iam_metadata: 'default' });
      }
    });

    test('renewal re-checks the role: new policies and TTL, refused once the role no longer binds the caller or is gone', async () => {
      await ok('POST', 'auth/cloud/role/renewing', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice`, token_policies: 'dev', token_ttl: '10m' });
      const auth = await loggedIn(alice, 'renewing');
      await ok('POST', 'auth/cloud/role/renewing', { token_policies: 'dev,ops', token_ttl: '20m' });
      const renewed = (await ok('POST', 'auth/token/renew-self', {}, auth.client_token)).auth;
      expect([renewed.policies, renewed.lease_duration]).toEqual([['dev', 'ops', 'default'], 1200]);
      await ok('POST', 'auth/cloud/role/renewing', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/bob` });
      const unbound = await call('POST', 'auth/token/renew-self', {}, auth.client_token);
      expect([unbound.status, unbound.body.errors]).toEqual([403, [`role "renewing" no longer binds "arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice"; the token cannot be renewed`]]);
      await ok('DELETE', 'auth/cloud/role/renewing');
      const gone = await call('POST', 'auth/token/renew-self', {}, auth.client_token);
      expect([gone.status, gone.body.errors]).toEqual([400, ['role "renewing" no longer exists; the token cannot be renewed']]);
    });

    test('login attempts, failed ones included, are audited with the credentials HMAC-ed', async () => {
      const file = path.join(dir, `audit-${kind}.log`);
      await ok('PUT', 'sys/audit/file', { type: 'file', options: { file_path: file } });
      try {
        const data = await signed(alice);
        const auth = await loggedIn(alice, 'dev');
        expect((await call('POST', 'auth/cloud/login', { ...data, role: 'nope' }, undefined)).status).toBe(400);
        const text = readFileSync(file, 'utf8');
        const signature = /Signature=([0-9a-f]+)/.exec(Buffer.from(data.iam_request_headers, 'base64').toString('utf8'))![1];
        for (const secret of [auth.client_token, data.iam_request_headers, data.iam_request_body, signature, alice.secretAccessKey]) expect(text).not.toContain(secret);
        const lines = text.trim().split('\n').map((line) => JSON.parse(line) as { type: string; request: { path: string; data: Record<string, string> }; error?: string; errors?: string[]; response?: { auth?: { client_token: string } } });
        const logins = lines.filter((line) => line.request.path === 'auth/cloud/login');
        const hashed = (await ok('POST', 'sys/audit-hash/file', { input: data.iam_request_headers })).data.hash as string;
        expect(logins.filter((line) => line.type === 'request').map((line) => line.request.data.iam_request_headers)).toContain(hashed);
        const responses = logins.filter((line) => line.type === 'response');
        expect(responses.some((line) => line.response?.auth?.client_token?.startsWith('hmac-sha256:'))).toBe(true);
        expect(responses.some((line) => JSON.stringify(line).includes('entry for role \\"nope\\" not found'))).toBe(true);
      } finally {
        await ok('DELETE', 'sys/audit/file');
      }
    });

    test('rotate-root replaces the method\'s key through IAM; the old key stops working', async () => {
      const before = methodKey.accessKeyId;
      const { data } = await ok('POST', 'auth/cloud/config/rotate-root');
      expect(data.access_key).not.toBe(before);
      expect(sts.state.keysOf('svc-auth').map((key) => key.id)).toEqual([data.access_key]);
      methodKey = { accessKeyId: data.access_key as string, secretAccessKey: sts.state.accessKeys.get(data.access_key as string)!.secret };
      // The new key works: writing a role resolves its principal through IAM.
      await ok('POST', 'auth/cloud/role/after-rotation', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:user/engineering/alice` });
      await ok('DELETE', 'auth/cloud/role/after-rotation');
    });

    // Each CLI run starts a process: two runs, with a test timeout for a loaded machine.
    test('svc login -method=cloud signs with the SDK credential chain (and the server id header), and stores the token', async () => {
      const home = mkdtempSync(path.join(dir, 'home-'));
      const env = { SVC_ADDR: url, HOME: home, AWS_ACCESS_KEY_ID: alice.accessKeyId, AWS_SECRET_ACCESS_KEY: alice.secretAccessKey, SVC_TOKEN: '' };
      await configureClient({ iam_server_id_header_value: SERVER_ID });
      try {
        const result = await runCli(['login', '-method=cloud', '-format=json', 'role=dev', `header_value=${SERVER_ID}`], env);
        expect([result.code, result.stderr]).toEqual([0, '']);
        const printed = JSON.parse(result.stdout) as { auth: { client_token: string; policies: string[] } };
        expect(printed.auth.policies).toEqual(['dev', 'default']);
        const stored = readFileSync(path.join(home, '.svc-token'), 'utf8').trim();
        expect(stored).toBe(printed.auth.client_token);
        expect((await ok('GET', 'auth/token/lookup-self', undefined, stored)).data.display_name).toBe('cloud-alice');
        const withoutHeader = await runCli(['login', '-method=cloud', 'role=dev'], env);
        expect([withoutHeader.code, withoutHeader.stderr]).toEqual([2, expect.stringContaining('missing header "X-Service-Cloud-IAM-Server-ID"')]);
      } finally {
        await configureClient();
      }
    }, 240_000);

    test('a login ignores a token sent with it, even one that is no longer valid', async () => {
      const data = { ...(await signed(alice)), role: 'dev' };
      expect((await call('POST', 'auth/cloud/login', data, 'svs.not-a-token')).status).toBe(200);
      expect((await call('GET', 'auth/cloud/role/dev', undefined, 'svs.not-a-token')).status).toBe(403);
    });
  });

  describe('vm login', () => {
    /** What the instance-metadata service of the instance serves (IMDSv2: a session token first). */
    async function imds(instance: Instance, document: 'pkcs7' | 'rsa2048' | 'document' | 'signature'): Promise<string> {
      const base = ec2.imdsUrl(instance.id);
      const token = await (await fetch(`${base}/latest/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } })).text();
      return (await fetch(`${base}/latest/dynamic/instance-identity/${document}`, { headers: { 'x-aws-ec2-metadata-token': token } })).text();
    }
    const pkcs7Login = async (instance: Instance, role: string, extra: Record<string, unknown> = {}) => call('POST', 'auth/cloud/login', { role, pkcs7: await imds(instance, 'rsa2048'), ...extra }, undefined);
    async function vmLoggedIn(instance: Instance, role: string, extra: Record<string, unknown> = {}) {
      const res = await pkcs7Login(instance, role, extra);
      expect([res.status, res.text]).toEqual([200, expect.any(String)]);
      return res.body.auth as { client_token: string; policies: string[]; metadata: Record<string, string>; entity_id: string };
    }

    beforeAll(async () => {
      await ok('POST', 'auth/cloud/config/certificate/provider', { cloud_public_cert: ec2.certificatePem, type: 'pkcs7' });
      await ok('POST', 'auth/cloud/config/certificate/provider-identity', { cloud_public_cert: ec2.certificatePem, type: 'identity' });
      await ok('POST', 'auth/cloud/role/web', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', bound_vpc_id: 'vpc-1a2b3c4d', token_policies: 'dev' });
    });

    test('with a PKCS#7 signature: a token for the instance, a generated nonce, and the access-list entry', async () => {
      const instance = ec2.launch();
      const auth = await vmLoggedIn(instance, 'web');
      expect(auth.policies).toEqual(['dev', 'default']);
      expect(auth.metadata).toMatchObject({ instance_id: instance.id, account_id: ACCOUNT_ID, region: 'us-east-1', image_id: instance.imageId, auth_type: 'vm', role: 'web', nonce: expect.any(String) });
      expect(auth.entity_id).toEqual(expect.any(String));
      const entry = (await ok('GET', `auth/cloud/identity-accesslist/${instance.id}`)).data;
      expect(entry).toMatchObject({ role: 'web', disallow_reauthentication: false, pending_time: instance.pendingTime.toISOString().replace(/\.\d{3}Z$/, 'Z') });
      expect(entry.client_nonce).toBeUndefined();
      expect((await ok('LIST', 'auth/cloud/identity-accesslist')).data.keys).toContain(instance.id);
      // The image id is the default role name.
      await ok('POST', `auth/cloud/role/${instance.imageId}`, { auth_type: 'vm', bound_image_id: instance.imageId });
      const other = ec2.launch();
      expect((await call('POST', 'auth/cloud/login', { pkcs7: await imds(other, 'pkcs7'), nonce: 'n-1' }, undefined)).status).toBe(200);
    });

    test('with the identity document and its signature; a document signed by no registered certificate is refused', async () => {
      const instance = ec2.launch();
      const identity = Buffer.from(await imds(instance, 'document')).toString('base64');
      const signature = await imds(instance, 'signature');
      await anonymous.ok('POST', 'auth/cloud/login', { role: 'web', identity, signature, nonce: 'n-2' });
      const tampered = Buffer.from((await imds(instance, 'document')).replace('ami-', 'ami-9')).toString('base64');
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', identity: tampered, signature, nonce: 'n-2' }, 400, /failed to verify the instance identity document using its signature/);
      await ok('DELETE', 'auth/cloud/config/certificate/provider-identity');
      try {
        await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', identity, signature, nonce: 'n-2' }, 400, /failed to verify/);
      } finally {
        await ok('POST', 'auth/cloud/config/certificate/provider-identity', { cloud_public_cert: ec2.certificatePem, type: 'identity' });
      }
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', identity }, 400, /some of the vm auth values are missing: "signature"/);
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: 'bm90IGEgc2lnbmF0dXJl' }, 400, /field "pkcs7": not a PKCS#7 signature/);
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: await imds(instance, 'pkcs7'), nonce: 'x'.repeat(129) }, 400, /field "nonce": longer than 128/);
    });

    test('re-authentication needs the nonce of the first login', async () => {
      const instance = ec2.launch();
      const first = await vmLoggedIn(instance, 'web');
      const nonce = first.metadata.nonce;
      await vmLoggedIn(instance, 'web', { nonce });
      const wrong = await pkcs7Login(instance, 'web', { nonce: 'guessed' });
      expect([wrong.status, wrong.body.errors]).toEqual([403, ['client nonce mismatch']]);
      expect((await pkcs7Login(instance, 'web')).status).toBe(403);
      // Clearing the access-list entry lets the instance start afresh.
      await ok('DELETE', `auth/cloud/identity-accesslist/${instance.id}`);
      await vmLoggedIn(instance, 'web', { nonce: 'fresh' });
    });

    test('migration: a newer document with another nonce when the role allows it, never an older one', async () => {
      await ok('POST', 'auth/cloud/role/movable', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', allow_instance_migration: true });
      const instance = ec2.launch();
      const before = await imds(instance, 'rsa2048');
      await vmLoggedIn(instance, 'movable', { nonce: 'host-a' });
      instance.pendingTime = new Date(instance.pendingTime.getTime() + 60_000); // stopped and started on another host
      await vmLoggedIn(instance, 'movable', { nonce: 'host-b' });
      const older = await call('POST', 'auth/cloud/login', { role: 'movable', pkcs7: before, nonce: 'host-b' }, undefined);
      expect([older.status, older.body.errors]).toEqual([403, ['instance meta-data is older than the one used for previous login']]);
      const sameTime = await pkcs7Login(instance, 'movable', { nonce: 'host-c' });
      expect([sameTime.status, sameTime.body.errors]).toEqual([403, ['client nonce mismatch and instance meta-data incorrect']]);
      // Without allow_instance_migration a new nonce is refused even from a newer document.
      const fixed = ec2.launch();
      await vmLoggedIn(fixed, 'web', { nonce: 'one' });
      fixed.pendingTime = new Date(fixed.pendingTime.getTime() + 60_000);
      expect((await pkcs7Login(fixed, 'web', { nonce: 'two' })).status).toBe(403);
    });

    test('disallow_reauthentication (or an empty nonce): one login per instance until its entry is removed', async () => {
      await ok('POST', 'auth/cloud/role/once', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', disallow_reauthentication: true });
      const instance = ec2.launch();
      const auth = await vmLoggedIn(instance, 'once');
      expect(auth.metadata.nonce).toBeUndefined();
      const again = await pkcs7Login(instance, 'once');
      expect([again.status, again.body.errors]).toEqual([403, ['reauthentication is disabled']]);
      await ok('DELETE', `auth/cloud/identity-whitelist/${instance.id}`);
      await vmLoggedIn(instance, 'once');
      const emptyNonce = ec2.launch();
      await vmLoggedIn(emptyNonce, 'web', { nonce: '' });
      expect((await pkcs7Login(emptyNonce, 'web', { nonce: '' })).body.errors).toEqual(['reauthentication is disabled']);
    });

    test('the instance must be running and match every binding; the instance profile\'s role is read from IAM', async () => {
      const stopped = ec2.launch({ state: 'stopped' });
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: await imds(stopped, 'pkcs7') }, 400, /is not running \(state: stopped\)/);
      const elsewhere = ec2.launch({ vpcId: 'vpc-other' });
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: await imds(elsewhere, 'pkcs7') }, 403, /VPC id "vpc-other" of instance .* does not satisfy the constraint/);
      sts.state.createRole('web-node', 3600, '/nodes/');
      const profile = sts.state.createInstanceProfile('web-node-profile', 'web-node');
      await ok('POST', 'auth/cloud/role/profiled', { auth_type: 'vm', bound_iam_role_arn: `arn:aws:iam::${ACCOUNT_ID}:role/nodes/*`, bound_iam_instance_profile_arn: profile.arn });
      await vmLoggedIn(ec2.launch({ instanceProfileArn: profile.arn }), 'profiled', { nonce: 'p' });
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'profiled', pkcs7: await imds(ec2.launch(), 'pkcs7') }, 403, /instance profile "none"/);
    });

    test('an instance of another account is looked up as the role config/sts names there', async () => {
      const otherAccount = '210987654321';
      const instance = ec2.launch({ accountId: otherAccount });
      await ok('POST', 'auth/cloud/role/partner', { auth_type: 'vm', bound_account_id: otherAccount });
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'partner', pkcs7: await imds(instance, 'pkcs7') }, 400, /InvalidInstanceID.NotFound/);
      sts.state.roles.set('lookup', { name: 'lookup', id: 'AROAPARTNERLOOKUP', arn: `arn:aws:iam::${otherAccount}:role/lookup`, path: '/', maxSessionDuration: 3600 });
      await ok('POST', `auth/cloud/config/sts/${otherAccount}`, { sts_role: `arn:aws:iam::${otherAccount}:role/lookup` });
      try {
        await vmLoggedIn(instance, 'partner', { nonce: 'x' });
      } finally {
        await ok('DELETE', `auth/cloud/config/sts/${otherAccount}`);
      }
    });

    test('role tags: the tag\'s narrower policies; a missing, forged or denied tag is refused', async () => {
      await ok('POST', 'auth/cloud/role/tagged', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', role_tag: 'SvcRole', token_policies: 'dev,ops' });
      await refused('POST', 'auth/cloud/role/tagged/tag', { policies: 'admin' }, 400, /field "policies": admin not among the role's policies/);
      await refused('POST', 'auth/cloud/role/web/tag', {}, 400, /has no role_tag key/);
      const { data } = await ok('POST', 'auth/cloud/role/tagged/tag', { policies: 'ops' });
      expect(data.tag_key).toBe('SvcRole');
      const instance = ec2.launch();
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'tagged', pkcs7: await imds(instance, 'pkcs7') }, 403, /missing tag with key "SvcRole" on the instance/);
      instance.tags.SvcRole = String(data.tag_value).replace('p=ops', 'p=dev,ops');
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'tagged', pkcs7: await imds(instance, 'pkcs7') }, 403, /role tag signature verification failed/);
      instance.tags.SvcRole = data.tag_value as string;
      expect((await vmLoggedIn(instance, 'tagged', { nonce: 't' })).policies).toEqual(['ops', 'default']);

      await ok('POST', `auth/cloud/roletag-denylist/${data.tag_value as string}`);
      expect((await ok('LIST', 'auth/cloud/roletag-denylist')).data.keys).toEqual([data.tag_value]);
      expect((await ok('GET', `auth/cloud/roletag-blacklist/${data.tag_value as string}`)).data).toEqual({ creation_time: expect.any(String), expiration_time: expect.any(String) });
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'tagged', pkcs7: await imds(instance, 'pkcs7'), nonce: 't' }, 403, /role tag is on the deny list/);
      await refused('POST', 'auth/cloud/roletag-denylist/v1:forged:r=tagged:d=false:m=false:AAAA', {}, 403, /role tag signature verification failed/);
      await ok('DELETE', `auth/cloud/roletag-denylist/${data.tag_value as string}`);
      await vmLoggedIn(instance, 'tagged', { nonce: 't' });
    });

    test('tidy removes expired entries of both lists', async () => {
      await ok('POST', 'auth/cloud/role/brief', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', role_tag: 'Brief', token_max_ttl: 1 });
      const tag = (await ok('POST', 'auth/cloud/role/brief/tag', { max_ttl: 1 })).data.tag_value as string;
      await ok('POST', `auth/cloud/roletag-denylist/${tag}`);
      const instance = ec2.launch({ tags: { Brief: (await ok('POST', 'auth/cloud/role/brief/tag', {})).data.tag_value as string } });
      await vmLoggedIn(instance, 'brief', { nonce: 'b' });
      // Entries last as long as the tokens they stand for may: a second here, so tidy soon removes both.
      let removed = 0;
      await eventually(async () => {
        removed += (await ok('POST', 'auth/cloud/tidy/identity-accesslist', { safety_buffer: 1 })).data.entries_removed as number;
        removed += (await ok('POST', 'auth/cloud/tidy/roletag-denylist', { safety_buffer: 1 })).data.entries_removed as number;
        return removed === 2;
      }, 15_000, 500);
      expect((await call('GET', `auth/cloud/identity-accesslist/${instance.id}`)).status).toBe(404);
      expect((await call('GET', `auth/cloud/roletag-denylist/${tag}`)).status).toBe(404);
    });

    test('the periodic tidy (the core runs it about once a minute, on one gateway) removes expired entries of both lists unasked', async () => {
      await ok('POST', 'auth/cloud/config/tidy/identity-accesslist', { safety_buffer: 1 });
      await ok('POST', 'auth/cloud/config/tidy/roletag-denylist', { safety_buffer: 1 });
      await ok('POST', 'auth/cloud/role/fleeting', { auth_type: 'vm', bound_image_id: 'ami-0123456789abcdef0', role_tag: 'Fleeting', token_max_ttl: 1 });
      const tag = (await ok('POST', 'auth/cloud/role/fleeting/tag', { max_ttl: 1 })).data.tag_value as string;
      await ok('POST', `auth/cloud/roletag-denylist/${tag}`);
      const instance = ec2.launch({ tags: { Fleeting: (await ok('POST', 'auth/cloud/role/fleeting/tag', {})).data.tag_value as string } });
      await vmLoggedIn(instance, 'fleeting', { nonce: 'f' });
      const gone = async (where: string) => (await call('GET', where)).status === 404;
      await eventually(async () => (await gone(`auth/cloud/identity-accesslist/${instance.id}`)) && gone(`auth/cloud/roletag-denylist/${tag}`), 90_000, 1_000);
    });

    test('an iam login that infers its instance: the session named after the instance id, held to the instance bindings', async () => {
      sts.state.createRole('node', 3600);
      await ok('POST', 'auth/cloud/role/inferred', { bound_iam_principal_arn: `arn:aws:iam::${ACCOUNT_ID}:role/node`, inferred_entity_type: 'vm_instance', inferred_cloud_region: 'us-east-1', bound_image_id: 'ami-0123456789abcdef0' });
      const instance = ec2.launch();
      const auth = await loggedIn(assumedRole('node', instance.id), 'inferred');
      expect(auth.metadata).toMatchObject({ inferred_entity_type: 'vm_instance', inferred_entity_id: instance.id, inferred_cloud_region: 'us-east-1' });
      instance.state = 'stopped';
      const renewal = await call('POST', 'auth/token/renew-self', {}, auth.client_token);
      expect([renewal.status, renewal.body.errors]).toEqual([400, [`instance "${instance.id}" is not running (state: stopped)`]]);
      const stoppedLogin = await login(assumedRole('node', instance.id), 'inferred');
      expect(stoppedLogin.status).toBe(400);
      const notAnInstance = await login(assumedRole('node', 'i-0000000000000dead'), 'inferred');
      expect([notAnInstance.status, notAnInstance.body.errors[0]]).toEqual([400, expect.stringMatching(/InvalidInstanceID.NotFound/)]);
    });

    test('the alias follows vm_alias; EC2 down is a 502', async () => {
      const accessor = (await ok('GET', 'sys/auth')).data['cloud/'].accessor as string;
      await ok('POST', 'auth/cloud/config/identity', { vm_alias: 'instance_id', vm_metadata: ['instance_id', 'region'] });
      try {
        const instance = ec2.launch();
        const auth = await vmLoggedIn(instance, 'web', { nonce: 'a' });
        const entity = (await ok('POST', 'identity/lookup/entity', { alias_name: instance.id, alias_mount_accessor: accessor })).data;
        expect([entity.id, entity.aliases[0].metadata]).toEqual([auth.entity_id, { instance_id: instance.id, region: 'us-east-1' }]);
      } finally {
        await ok('POST', 'auth/cloud/config/identity', { vm_alias: 'role_id', vm_metadata: 'default' });
      }
      ec2.failNext(503, 3);
      await anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: await imds(ec2.launch(), 'pkcs7') }, 502, /describe instance .* failed \(the provider answered 503\)/);
    });

    test('EC2 and STS that accept and never answer: a vm and an iam login answer 502 naming the endpoint within the deadline', async () => {
      const silent = await startSilentListener();
      const instance = ec2.launch();
      const iamLogin = { ...(await signed(alice)), role: 'dev' };
      await configureClient({ endpoint: silent.url, sts_endpoint: silent.url });
      try {
        const started = Date.now();
        await Promise.all([
          anonymous.refused('POST', 'auth/cloud/login', { role: 'web', pkcs7: await imds(instance, 'pkcs7') }, 502, /describe instance .* failed \(the provider did not answer\): EC2 endpoint: TimeoutError/),
          anonymous.refused('POST', 'auth/cloud/login', iamLogin, 502, /error making upstream request: STS did not answer: no answer within/),
        ]);
        // One attempt each (max_retries 0): one deadline, with room for a loaded machine.
        expect(Date.now() - started).toBeLessThan(2 * ANSWER_TIMEOUT_MS);
        expect(silent.accepted()).toBeGreaterThanOrEqual(2);
      } finally {
        await configureClient();
        await silent.close();
      }
    });
  });
});
