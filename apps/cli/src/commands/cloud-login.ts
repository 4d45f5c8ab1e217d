/**
 * `svc login -method=cloud role=... [header_value=...] [region=...]`: as Vault's CLI for its AWS
 * method, the login data is an sts:GetCallerIdentity request signed with the caller's provider
 * credentials: `aws_access_key_id`/`aws_secret_access_key`/`aws_security_token` when given, else
 * CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, else the provider SDK's credential chain (AWS_* variables,
 * shared files, instance role).
 */
import { cloudIamLoginData, type CloudCredentials } from '@svc/sdk';
import { UsageError } from './args';

/** Login arguments the CLI turns into the signed request; the server never sees them. */
const CLIENT_ONLY = ['header_value', 'region', 'aws_access_key_id', 'aws_secret_access_key', 'aws_security_token'];

async function credentials(data: Record<string, unknown>, env: Record<string, string | undefined>): Promise<CloudCredentials> {
  const given = (name: string) => (typeof data[name] === 'string' && data[name] !== '' ? (data[name] as string) : undefined);
  const accessKeyId = given('aws_access_key_id');
  const secretAccessKey = given('aws_secret_access_key');
  if (accessKeyId && secretAccessKey) return { accessKeyId, secretAccessKey, sessionToken: given('aws_security_token') };
  if (accessKeyId || secretAccessKey) throw new UsageError('aws_access_key_id and aws_secret_access_key go together');
  if (env.CLOUD_ACCESS_KEY && env.CLOUD_SECRET_KEY) return { accessKeyId: env.CLOUD_ACCESS_KEY, secretAccessKey: env.CLOUD_SECRET_KEY };
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  try {
    return await defaultProvider()();
  } catch (err) {
    throw new UsageError(`no cloud credentials found (aws_access_key_id=..., CLOUD_ACCESS_KEY, or the provider's chain): ${(err as Error).message}`);
  }
}

/** The login fields of a cloud iam login, in place of the client-only arguments. */
export async function cloudLoginData(data: Record<string, unknown>, env: Record<string, string | undefined>): Promise<Record<string, unknown>> {
  const signed = await cloudIamLoginData({
    credentials: await credentials(data, env),
    region: typeof data.region === 'string' && data.region ? data.region : env.CLOUD_REGION || 'us-east-1',
    serverId: typeof data.header_value === 'string' ? data.header_value : undefined,
  });
  const fields = Object.fromEntries(Object.entries(data).filter(([name]) => !CLIENT_ONLY.includes(name)));
  return { ...fields, ...signed };
}
