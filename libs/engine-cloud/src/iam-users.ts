/**
 * IAM users the engine creates for `iam_user` credentials, and their removal. Creation is several
 * provider calls; a write-ahead record names the user before the first, so a user left half-made
 * (a refused call midway, a crash, a provider gone before the rollback finished) is removed later
 * by the periodic rollback. Removal takes off everything IAM refuses to delete a user with, in an
 * order IAM accepts, then the user.
 */
import { randomUUID } from 'node:crypto';
import type { CreateUserCommandOutput } from '@aws-sdk/client-iam';
import type { StorageView } from '@svc/storage';
import type { Logger } from 'pino';
import { isRefusal, isTimeout, providerError, providerErrorCode, type ProviderClients } from '@svc/cloud-provider';
import { WAL, type RoleRecord } from './records';

/** Vault's rule: a write-ahead record younger than this may belong to a creation still under way. */
export const WAL_ROLLBACK_MIN_AGE_MS = 5 * 60_000;

export interface CreatedUser {
  arn: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Creates the user, its policies, groups, tags and an access key; on failure removes what was made. */
export async function createIamUser(clients: ProviderClients, storage: StorageView, logger: Logger, username: string, roleName: string, role: RoleRecord): Promise<CreatedUser> {
  const { iam, IAM, secrets } = clients;
  const walId = randomUUID();
  await WAL.put(storage, walId, { username, created_at: Date.now() });
  let created: CreateUserCommandOutput | undefined;
  try {
    created = await iam.send(new IAM.CreateUserCommand({ UserName: username, Path: role.user_path || undefined, PermissionsBoundary: role.permissions_boundary_arn || undefined }));
    for (const arn of role.policy_arns) await iam.send(new IAM.AttachUserPolicyCommand({ UserName: username, PolicyArn: arn }));
    if (role.policy_document) await iam.send(new IAM.PutUserPolicyCommand({ UserName: username, PolicyName: roleName, PolicyDocument: role.policy_document }));
    for (const group of role.iam_groups) await iam.send(new IAM.AddUserToGroupCommand({ UserName: username, GroupName: group }));
    const tags = Object.entries(role.iam_tags).map(([Key, Value]) => ({ Key, Value }));
    if (tags.length > 0) await iam.send(new IAM.TagUserCommand({ UserName: username, Tags: tags }));
    const { AccessKey: key } = await iam.send(new IAM.CreateAccessKeyCommand({ UserName: username }));
    await WAL.delete(storage, walId);
    return { arn: created.User?.Arn ?? '', accessKeyId: key?.AccessKeyId ?? '', secretAccessKey: key?.SecretAccessKey ?? '' };
  } catch (err) {
    // CreateUser refused (the name is taken, say): nothing was made, and a user of that name is not
    // ours to delete. Made, or no answer: the user may exist, and is rolled back; a provider that
    // went silent would keep the client waiting through the rollback too, so the record is left
    // for the periodic rollback.
    if (!created && isRefusal(err)) await WAL.delete(storage, walId);
    else if (!isTimeout(err)) await rollBack(clients, storage, logger, walId, username);
    throw providerError('create user', err, secrets);
  }
}

async function collect<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const page of pages) all.push(page);
  return all;
}

/** Ignores IAM's NoSuchEntity: what is to be removed is already gone. */
export async function unlessGone(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (providerErrorCode(err) !== 'NoSuchEntity') throw err;
  }
}

/**
 * Removes a user and everything attached to it. Resolves false when the user did not exist.
 * Provider errors are thrown as the SDK raised them.
 */
export async function deleteIamUser({ iam, IAM }: ProviderClients, username: string): Promise<boolean> {
  const client = { client: iam };
  let groups;
  try {
    groups = (await collect(IAM.paginateListGroupsForUser(client, { UserName: username }))).flatMap((page) => page.Groups ?? []);
  } catch (err) {
    if (providerErrorCode(err) === 'NoSuchEntity') return false;
    throw err;
  }
  for (const group of groups) await unlessGone(iam.send(new IAM.RemoveUserFromGroupCommand({ UserName: username, GroupName: group.GroupName })));
  const inline = (await collect(IAM.paginateListUserPolicies(client, { UserName: username }))).flatMap((page) => page.PolicyNames ?? []);
  for (const name of inline) await unlessGone(iam.send(new IAM.DeleteUserPolicyCommand({ UserName: username, PolicyName: name })));
  const attached = (await collect(IAM.paginateListAttachedUserPolicies(client, { UserName: username }))).flatMap((page) => page.AttachedPolicies ?? []);
  for (const policy of attached) await unlessGone(iam.send(new IAM.DetachUserPolicyCommand({ UserName: username, PolicyArn: policy.PolicyArn })));
  const keys = (await collect(IAM.paginateListAccessKeys(client, { UserName: username }))).flatMap((page) => page.AccessKeyMetadata ?? []);
  for (const key of keys) await unlessGone(iam.send(new IAM.DeleteAccessKeyCommand({ UserName: username, AccessKeyId: key.AccessKeyId })));
  // A login profile (someone gave the user console access) would otherwise keep the user forever.
  await unlessGone(iam.send(new IAM.DeleteLoginProfileCommand({ UserName: username })));
  await unlessGone(iam.send(new IAM.DeleteUserCommand({ UserName: username })));
  return true;
}

/** Rolls back every write-ahead record old enough that its creation cannot still be running. */
export async function rollbackAbandonedUsers(clients: ProviderClients, storage: StorageView, logger: Logger, now = Date.now()): Promise<void> {
  for (const id of await WAL.list(storage)) {
    const entry = await WAL.get(storage, id);
    if (entry && now - entry.created_at >= WAL_ROLLBACK_MIN_AGE_MS && (await rollBack(clients, storage, logger, id, entry.username))) {
      logger.info({ user: entry.username }, 'rolled back a half-created user');
    }
  }
}

/**
 * Removes the user of a write-ahead record, then the record. A failure leaves the record, so the
 * periodic rollback tries again once the provider allows it.
 */
async function rollBack(clients: ProviderClients, storage: StorageView, logger: Logger, walId: string, username: string): Promise<boolean> {
  try {
    await deleteIamUser(clients, username);
    await WAL.delete(storage, walId);
    return true;
  } catch (err) {
    logger.warn({ user: username, error: providerErrorCode(err) || 'unknown' }, 'rollback of a half-created user failed; it will be retried');
    return false;
  }
}
