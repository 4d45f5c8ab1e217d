import { AttachUserPolicyCommand, CreateAccessKeyCommand, CreateUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { randomBytes } from 'node:crypto';
import { serveFloor } from './serve';

/**
 * Floor for `GET /v1/cloud/creds/:role` (an IAM user with one managed policy) and
 * `GET /v1/cloud/sts/:role` (an assumed role): checks a token against an in-memory map, makes the
 * same provider calls with the raw SDK (CreateUser, AttachUserPolicy, CreateAccessKey; or
 * AssumeRole) against the same emulator and answers JSON. Everything the service does on top
 * (routing, policy, the write-ahead record, the lease through the barrier, envelope, logging) is
 * what the ratio measures. FLOOR_PROVIDER_URL, FLOOR_ACCESS_KEY, FLOOR_SECRET_KEY, FLOOR_POLICY_ARN
 * and FLOOR_ROLE_ARN come from the emulator.
 */
const settings = {
  region: 'us-east-1',
  endpoint: process.env.FLOOR_PROVIDER_URL,
  credentials: { accessKeyId: process.env.FLOOR_ACCESS_KEY ?? '', secretAccessKey: process.env.FLOOR_SECRET_KEY ?? '' },
};
const iam = new IAMClient(settings);
const sts = new STSClient(settings);
const tokens = new Map([['bench-root', { policies: ['root'] }]]);
const LEASE_SECONDS = 3600;

async function issue(path: string): Promise<Record<string, unknown>> {
  if (path.startsWith('/v1/cloud/sts/')) {
    const assumed = await sts.send(new AssumeRoleCommand({ RoleArn: process.env.FLOOR_ROLE_ARN, RoleSessionName: `floor-${randomBytes(8).toString('hex')}`, DurationSeconds: LEASE_SECONDS }));
    const credentials = assumed.Credentials!;
    return { access_key: credentials.AccessKeyId, secret_key: credentials.SecretAccessKey, security_token: credentials.SessionToken, arn: assumed.AssumedRoleUser?.Arn };
  }
  const UserName = `floor-${randomBytes(10).toString('hex')}`;
  const user = await iam.send(new CreateUserCommand({ UserName }));
  await iam.send(new AttachUserPolicyCommand({ UserName, PolicyArn: process.env.FLOOR_POLICY_ARN }));
  const { AccessKey: key } = await iam.send(new CreateAccessKeyCommand({ UserName }));
  return { access_key: key?.AccessKeyId, secret_key: key?.SecretAccessKey, security_token: null, arn: user.User?.Arn };
}

serveFloor((req, res) => {
  const token = req.headers['x-service-token'];
  if (typeof token !== 'string' || !tokens.has(token)) {
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
    return;
  }
  issue(req.url ?? '')
    .then((data) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ lease_duration: LEASE_SECONDS, data }));
    })
    .catch((err: Error) => {
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [err.name] }));
    });
});
