/**
 * The IAM + STS emulator and its SigV4 check, driven by the real AWS SDK: requests the SDK signs
 * verify; a wrong secret, an unknown key, a tampered body, a skewed clock and an expired session
 * are refused with AWS's error codes; IAM's rules hold; credentials it issues authenticate.
 */
import { CreateAccessKeyCommand, CreateUserCommand, DeleteUserCommand, IAMClient, PutUserPolicyCommand } from '@aws-sdk/client-iam';
import { AssumeRoleCommand, GetCallerIdentityCommand, GetFederationTokenCommand, STSClient } from '@aws-sdk/client-sts';
import { SignatureV4 } from '@smithy/signature-v4';
import { ACCOUNT_ID, startIamStsEmulator, type IamStsEmulator } from './iam-sts';
import { NodeSha256 } from '@svc/sdk';

interface Keys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

describe('IAM + STS emulator', () => {
  let emulator: IamStsEmulator;
  let admin: Keys;

  beforeAll(async () => {
    emulator = await startIamStsEmulator();
    emulator.state.createUser('admin');
    const key = emulator.state.createAccessKey('admin');
    admin = { accessKeyId: key.id, secretAccessKey: key.secret };
  });
  afterAll(() => emulator.close());
  afterEach(() => {
    emulator.clockOffsetMs = 0;
  });

  const sts = (credentials: Keys, maxAttempts = 1) => new STSClient({ endpoint: emulator.url, region: 'us-east-1', credentials, maxAttempts });
  const iam = (credentials: Keys) => new IAMClient({ endpoint: emulator.url, region: 'us-east-1', credentials, maxAttempts: 1 });

  async function errorOf(promise: Promise<unknown>): Promise<{ name: string; status?: number }> {
    try {
      await promise;
    } catch (err) {
      return { name: (err as Error).name, status: (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode };
    }
    throw new Error('the call succeeded');
  }

  test("the SDK's signed requests verify: GetCallerIdentity answers the caller", async () => {
    const identity = await sts(admin).send(new GetCallerIdentityCommand({}));
    expect(identity).toMatchObject({ Account: ACCOUNT_ID, Arn: `arn:aws:iam::${ACCOUNT_ID}:user/admin` });
    const created = await iam(admin).send(new CreateUserCommand({ UserName: 'signed-ok', Path: '/team/' }));
    expect(created.User?.Arn).toBe(`arn:aws:iam::${ACCOUNT_ID}:user/team/signed-ok`);
  });

  test('a wrong secret is SignatureDoesNotMatch, an unknown key InvalidClientTokenId (403)', async () => {
    expect(await errorOf(sts({ ...admin, secretAccessKey: `${admin.secretAccessKey}x` }).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
    expect(await errorOf(sts({ ...admin, accessKeyId: 'AKIAUNKNOWNUNKNOWN00' }).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'InvalidClientTokenId', status: 403 });
  });

  test('a body changed after signing is SignatureDoesNotMatch', async () => {
    const client = iam(admin);
    client.middlewareStack.add(
      (next) => async (args) => {
        // Same length, so only the signature can tell.
        const request = args.request as { body: string };
        request.body = request.body.replace('UserName=tampered', 'UserName=tamperex');
        return next(args);
      },
      { step: 'deserialize', name: 'tamperAfterSigning' },
    );
    expect(await errorOf(client.send(new CreateUserCommand({ UserName: 'tampered' })))).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
    expect(emulator.state.users.has('tamperex')).toBe(false);
  });

  test('a request signed more than 15 minutes from the server clock is RequestExpired', async () => {
    emulator.clockOffsetMs = 16 * 60_000;
    expect(await errorOf(sts(admin).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'RequestExpired', status: 403 });
    emulator.clockOffsetMs = 14 * 60_000;
    expect((await sts(admin).send(new GetCallerIdentityCommand({}))).Account).toBe(ACCOUNT_ID);
  });

  test('STS scope in another region than the endpoint is refused', async () => {
    const other = new STSClient({ endpoint: emulator.url, region: 'eu-west-1', credentials: admin, maxAttempts: 1 });
    expect(await errorOf(other.send(new GetCallerIdentityCommand({})))).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
  });

  test('a presigned GetCallerIdentity URL verifies; with a changed parameter it does not', async () => {
    const signer = new SignatureV4({ service: 'sts', region: 'us-east-1', credentials: admin, sha256: NodeSha256 });
    const { hostname, port } = new URL(emulator.url);
    const presigned = await signer.presign({
      method: 'GET',
      protocol: 'http:',
      hostname,
      port: Number(port),
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: `${hostname}:${port}` },
    });
    const url = `${emulator.url}/?${new URLSearchParams(presigned.query as Record<string, string>).toString()}`;
    const good = await fetch(url);
    expect(good.status).toBe(200);
    expect(await good.text()).toContain(`<Arn>arn:aws:iam::${ACCOUNT_ID}:user/admin</Arn>`);
    const tampered = await fetch(url.replace('Version=2011-06-15', 'Version=2011-06-16'));
    expect(tampered.status).toBe(403);
    expect(await tampered.text()).toContain('SignatureDoesNotMatch');
  });

  test('IAM rules: two keys at most, DeleteUser refused while the user has keys or policies', async () => {
    const client = iam(admin);
    await client.send(new CreateUserCommand({ UserName: 'two-keys' }));
    await client.send(new CreateAccessKeyCommand({ UserName: 'two-keys' }));
    await client.send(new CreateAccessKeyCommand({ UserName: 'two-keys' }));
    expect(await errorOf(client.send(new CreateAccessKeyCommand({ UserName: 'two-keys' })))).toEqual({ name: 'LimitExceededException', status: 409 });
    expect(await errorOf(client.send(new DeleteUserCommand({ UserName: 'two-keys' })))).toEqual({ name: 'DeleteConflictException', status: 409 });
    for (const key of emulator.state.keysOf('two-keys')) emulator.state.deleteAccessKey('two-keys', key.id);
    await client.send(new PutUserPolicyCommand({ UserName: 'two-keys', PolicyName: 'p', PolicyDocument: '{"Version":"2012-10-17","Statement":[]}' }));
    expect(await errorOf(client.send(new DeleteUserCommand({ UserName: 'two-keys' })))).toEqual({ name: 'DeleteConflictException', status: 409 });
    emulator.state.user('two-keys').inlinePolicies.clear();
    await client.send(new DeleteUserCommand({ UserName: 'two-keys' }));
    expect(emulator.state.users.has('two-keys')).toBe(false);
    expect(await errorOf(client.send(new PutUserPolicyCommand({ UserName: 'admin', PolicyName: 'bad', PolicyDocument: '{not json' })))).toEqual({ name: 'MalformedPolicyDocumentException', status: 400 });
  });

  test('session credentials work until they expire; AssumeRole needs a role, GetFederationToken long-term keys', async () => {
    const role = emulator.state.createRole('reader');
    const assumed = await sts(admin).send(new AssumeRoleCommand({ RoleArn: role.arn, RoleSessionName: 'tester', DurationSeconds: 900 }));
    const session = { accessKeyId: assumed.Credentials!.AccessKeyId!, secretAccessKey: assumed.Credentials!.SecretAccessKey!, sessionToken: assumed.Credentials!.SessionToken! };
    expect((await sts(session).send(new GetCallerIdentityCommand({}))).Arn).toBe(`arn:aws:sts::${ACCOUNT_ID}:assumed-role/reader/tester`);
    expect(await errorOf(sts({ ...session, sessionToken: 'forged' }).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'InvalidClientTokenId', status: 403 });
    expect(await errorOf(sts(session).send(new GetFederationTokenCommand({ Name: 'fed', Policy: '{}' })))).toEqual({ name: 'AccessDenied', status: 403 });

    emulator.state.sessions.get(session.accessKeyId)!.expiresAt = new Date(Date.now() - 1000);
    expect(await errorOf(sts(session).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'ExpiredToken', status: 403 });

    expect(await errorOf(sts(admin).send(new AssumeRoleCommand({ RoleArn: `arn:aws:iam::${ACCOUNT_ID}:role/missing`, RoleSessionName: 'x1' })))).toEqual({ name: 'AccessDenied', status: 403 });
    const federated = await sts(admin).send(new GetFederationTokenCommand({ Name: 'fed-user', Policy: '{"Version":"2012-10-17","Statement":[]}' }));
    const fedKeys = { accessKeyId: federated.Credentials!.AccessKeyId!, secretAccessKey: federated.Credentials!.SecretAccessKey!, sessionToken: federated.Credentials!.SessionToken! };
    expect((await sts(fedKeys).send(new GetCallerIdentityCommand({}))).Arn).toBe(`arn:aws:sts::${ACCOUNT_ID}:federated-user/fed-user`);
  });

  test('failNext injects a provider error into the next call of an action', async () => {
    emulator.failNext('GetCallerIdentity', { status: 503, code: 'ServiceUnavailable', message: 'try later' });
    expect(await errorOf(sts(admin).send(new GetCallerIdentityCommand({})))).toEqual({ name: 'ServiceUnavailable', status: 503 });
    expect((await sts(admin).send(new GetCallerIdentityCommand({}))).Account).toBe(ACCOUNT_ID);
  });
});

