/**
 * The instance a vm login (or an iam login inferring one) comes from: DescribeInstances in its
 * region, as the method's own credentials or, for an account with `config/sts/:account_id`, as the
 * role assumed there; then the role's instance bindings.
 */
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { callProvider, clientSettings, namingEndpoint } from '@svc/cloud-provider';
import { ServiceError } from '@svc/api-contract';
import { arnMatches } from './arn';
import type { CloudAuth } from './method';
import { STS_ROLES, type RoleRecord } from './records';

export interface InstanceFacts {
  instanceId: string;
  accountId: string;
  region: string;
  imageId: string;
  vpcId: string;
  subnetId: string;
  instanceProfileArn: string;
  tags: Record<string, string>;
}

let sdk: Promise<typeof Ec2Sdk> | undefined;

/** The EC2 SDK is large: loaded on the first instance lookup only. */
function loadEc2(): Promise<typeof Ec2Sdk> {
  sdk ??= import('@aws-sdk/client-ec2');
  return sdk;
}

/** Session name of the assumed role in another account. */
const SESSION_NAME = 'svc-auth-cloud';

/** Credentials for an account: the configured ones, or those of the role `config/sts/:account_id` names. */
async function accountCredentials(method: CloudAuth, accountId: string) {
  const config = await method.clientConfig();
  const sts = await STS_ROLES.get(method.storage, accountId);
  if (!sts) return { config, credentials: clientSettings(config).credentials };
  const { sts: client, STS, secrets } = await method.clients(config);
  const assumed = await callProvider(`assume ${sts.sts_role} for account ${accountId}`, secrets, () => client.send(new STS.AssumeRoleCommand({ RoleArn: sts.sts_role, RoleSessionName: SESSION_NAME })));
  const issued = assumed.Credentials;
  if (!issued?.AccessKeyId || !issued.SecretAccessKey) throw ServiceError.badGateway(`assuming ${sts.sts_role} returned no credentials`);
  return { config, credentials: { accessKeyId: issued.AccessKeyId, secretAccessKey: issued.SecretAccessKey, sessionToken: issued.SessionToken } };
}

/** The running instance `instanceId` of `accountId` in `region`. */
export async function describeInstance(method: CloudAuth, instanceId: string, accountId: string, region: string): Promise<InstanceFacts> {
  const EC2 = await loadEc2();
  const { config, credentials } = await accountCredentials(method, accountId);
  const client = namingEndpoint(new EC2.EC2Client({ ...clientSettings(config), region, credentials, endpoint: config?.endpoint || undefined }), 'EC2');
  try {
    const secrets = [config?.secret_key ?? '', credentials?.secretAccessKey ?? ''];
    const answer = await callProvider(`describe instance ${instanceId}`, secrets, () => client.send(new EC2.DescribeInstancesCommand({ InstanceIds: [instanceId] })));
    const instance = answer.Reservations?.[0]?.Instances?.[0];
    if (!instance || instance.InstanceId !== instanceId) throw ServiceError.badRequest(`no instance "${instanceId}" in ${region}`);
    if (instance.State?.Name !== 'running') throw ServiceError.badRequest(`instance "${instanceId}" is not running (state: ${instance.State?.Name ?? 'unknown'})`);
    return {
      instanceId,
      accountId: answer.Reservations?.[0]?.OwnerId ?? accountId,
      region,
      imageId: instance.ImageId ?? '',
      vpcId: instance.VpcId ?? '',
      subnetId: instance.SubnetId ?? '',
      instanceProfileArn: instance.IamInstanceProfile?.Arn ?? '',
      tags: Object.fromEntries((instance.Tags ?? []).map((tag) => [tag.Key ?? '', tag.Value ?? ''])),
    };
  } finally {
    client.destroy();
  }
}

/** The role ARNs of an instance profile (GetInstanceProfile by the name its ARN ends in). */
async function profileRoleArns(method: CloudAuth, profileArn: string): Promise<string[]> {
  const { iam, IAM, secrets } = await method.clients();
  const name = profileArn.slice(profileArn.lastIndexOf('/') + 1);
  const answer = await callProvider(`read instance profile "${name}"`, secrets, () => iam.send(new IAM.GetInstanceProfileCommand({ InstanceProfileName: name })));
  return (answer.InstanceProfile?.Roles ?? []).map((role) => role.Arn ?? '');
}

/** Every instance binding of the role holds for the instance; for a list, one matching value is enough. */
export async function checkInstanceBindings(method: CloudAuth, role: RoleRecord, instance: InstanceFacts): Promise<void> {
  const refuse = (what: string, value: string) => {
    throw ServiceError.forbidden(`${what} "${value}" of instance "${instance.instanceId}" does not satisfy the constraint on the role`);
  };
  const exact: [keyof RoleRecord & `bound_${string}`, string, string][] = [
    ['bound_vm_instance_id', 'instance id', instance.instanceId],
    ['bound_account_id', 'account id', instance.accountId],
    ['bound_region', 'region', instance.region],
    ['bound_image_id', 'image id', instance.imageId],
    ['bound_vpc_id', 'VPC id', instance.vpcId],
    ['bound_subnet_id', 'subnet id', instance.subnetId],
  ];
  for (const [field, what, value] of exact) {
    const bound = role[field] as string[];
    if (bound.length && !bound.includes(value)) refuse(what, value);
  }
  if (role.bound_iam_instance_profile_arn.length && !role.bound_iam_instance_profile_arn.some((pattern) => arnMatches(pattern, instance.instanceProfileArn))) {
    refuse('instance profile', instance.instanceProfileArn || 'none');
  }
  if (role.bound_iam_role_arn.length) {
    const roleArns = instance.instanceProfileArn ? await profileRoleArns(method, instance.instanceProfileArn) : [];
    if (!roleArns.some((arn) => role.bound_iam_role_arn.some((pattern) => arnMatches(pattern, arn)))) refuse('IAM role', roleArns.join(', ') || 'none');
  }
}
