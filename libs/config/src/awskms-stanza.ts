import type { AwsKmsSealConfig } from '@svc/seal';
import type { Section } from './section';

/** AWS region names: `us-east-1`, `eu-central-2`, `us-gov-west-1`, `cn-north-1`, ... */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** `seal "awskms"`, Vault's fields. A key id or endpoint from the environment was already put in by `withSecretsFromEnvironment`. */
export function parseAwsKmsSeal(section: Section): AwsKmsSealConfig {
  const kmsKeyId = section.requiredString('kms_key_id', 'is required (or set SVC_AWSKMS_SEAL_KEY_ID): the id, ARN or alias (alias/...) of the KMS key');
  const region = section.string('region');
  if (region !== undefined && !AWS_REGION.test(region)) throw section.error(`region must be an AWS region such as us-east-1, not "${region}"`);
  const endpoint = section.string('endpoint');
  if (endpoint !== undefined && (!/^https?:\/\//.test(endpoint) || !URL.canParse(endpoint))) {
    throw section.error('endpoint must be an http:// or https:// URL (or set AWS_KMS_ENDPOINT)');
  }
  const accessKey = section.string('access_key');
  const secretKey = section.string('secret_key');
  const sessionToken = section.string('session_token');
  if ((accessKey === undefined) !== (secretKey === undefined)) {
    throw section.error('access_key and secret_key must be given together (or neither, to use the AWS_* variables, profile or instance role)');
  }
  if (sessionToken !== undefined && accessKey === undefined) throw section.error('session_token needs access_key and secret_key (the temporary credentials it belongs to)');
  const config: AwsKmsSealConfig = { type: 'awskms', kmsKeyId };
  if (region !== undefined) config.region = region;
  if (endpoint !== undefined) config.endpoint = endpoint;
  if (accessKey !== undefined && secretKey !== undefined) Object.assign(config, { accessKey, secretKey });
  if (sessionToken !== undefined) config.sessionToken = sessionToken;
  return config;
}
