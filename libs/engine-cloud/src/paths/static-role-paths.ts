/**
 * static-roles/:name and static-creds/:name: existing IAM users whose access key the engine
 * rotates. A rotation deletes the user's oldest key when it already has the two IAM allows, then
 * creates one; it runs when the role is created and whenever `rotation_period` has passed (the
 * core's periodic call, under the role's lock so one replica rotates each due time).
 */
import { listPath, type FieldData, type FieldMap, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import type { CloudEngine } from '../engine';
import { unlessGone } from '../iam-users';
import { callProvider } from '@svc/cloud-provider';
import { STATIC_ROLES, type StaticRoleRecord } from '../records';
import { ROLE_NAME } from './role-paths';

const MIN_ROTATION_PERIOD = 60;
const IAM_MAX_ACCESS_KEYS = 2;
const LOCK_TTL_MS = 60_000;

const STATIC_ROLE_FIELDS: FieldMap = {
  ...ROLE_NAME,
  username: { type: 'string', description: 'Existing IAM user whose access key is rotated. Required when creating; cannot change.' },
  rotation_period: { type: 'duration', description: 'Rotate this often: at least 1 minute ("24h" or 86400). Required when creating; a new value counts from now.' },
};

/** Rotates the user's key: the oldest goes first if the user has the most IAM allows. */
async function rotate(engine: CloudEngine, storage: StorageView, name: string, role: StaticRoleRecord): Promise<StaticRoleRecord> {
  const { iam, IAM, secrets } = await engine.clients();
  const UserName = role.username;
  const key = await callProvider(`rotate the access key of ${UserName}`, secrets, async () => {
    const { User: user } = await iam.send(new IAM.GetUserCommand({ UserName }));
    if (role.user_id && user?.UserId !== role.user_id) throw ServiceError.badRequest(`user ${UserName} was deleted and recreated since static role "${name}" was written; write the role again`);
    const { AccessKeyMetadata: keys = [] } = await iam.send(new IAM.ListAccessKeysCommand({ UserName }));
    if (keys.length >= IAM_MAX_ACCESS_KEYS) {
      const oldest = [...keys].sort((a, b) => (a.CreateDate?.getTime() ?? 0) - (b.CreateDate?.getTime() ?? 0))[0];
      await iam.send(new IAM.DeleteAccessKeyCommand({ UserName, AccessKeyId: oldest.AccessKeyId }));
    }
    return { userId: user?.UserId ?? '', created: (await iam.send(new IAM.CreateAccessKeyCommand({ UserName }))).AccessKey };
  });
  if (!key.created?.AccessKeyId || !key.created.SecretAccessKey) throw ServiceError.badGateway('the provider returned no access key');
  const now = Date.now();
  const rotated: StaticRoleRecord = {
    ...role,
    user_id: key.userId,
    access_key: key.created.AccessKeyId,
    secret_key: key.created.SecretAccessKey,
    last_rotation: new Date(now).toISOString(),
    next_rotation: new Date(now + role.rotation_period * 1000).toISOString(),
  };
  await STATIC_ROLES.put(storage, name, rotated);
  engine.context.logger.info({ mount: engine.mount.path, role: name }, 'rotated the access key of a static role');
  return rotated;
}

/** The role's lock, taken by every change of a static role: one replica at a time rotates or rewrites it. */
function withRoleLock<T>(engine: CloudEngine, name: string, fn: () => Promise<T>): Promise<T | null> {
  return engine.context.locks.withLock(`cloud/${engine.mount.uuid}/static-role/${name}`, LOCK_TTL_MS, fn);
}

/**
 * Runs `fn` under the role's lock on the role as storage holds it: a read cache of this process
 * may not have another replica's latest rotation yet, and a change made from a stale copy would
 * rotate again or put back a key that no longer works. Another holder of the lock is a 409.
 */
async function changeStaticRole<T>(engine: CloudEngine, name: string, fn: (stored: StaticRoleRecord | null) => Promise<T>): Promise<T> {
  const changed = await withRoleLock(engine, name, async () => ({ result: await fn(await STATIC_ROLES.getStored(engine.storage, name)) }));
  if (changed === null) throw ServiceError.conflict(`static role "${name}" is being changed by another request or rotated; try again`);
  return changed.result;
}

async function writeStaticRole(engine: CloudEngine, fields: FieldData): Promise<undefined> {
  const name = fields.params.name;
  return changeStaticRole(engine, name, async (stored) => {
    const username = fields.has('username') ? fields.get<string>('username') : stored?.username;
    if (!username) throw ServiceError.badRequest('missing required field "username"');
    if (stored && username !== stored.username) throw ServiceError.badRequest(`field "username": static role "${name}" rotates ${stored.username}; delete it to change the user`);
    const period = fields.has('rotation_period') ? fields.get<number>('rotation_period') : stored?.rotation_period;
    if (period === undefined) throw ServiceError.badRequest('missing required field "rotation_period"');
    if (period < MIN_ROTATION_PERIOD) throw ServiceError.badRequest('field "rotation_period": must be at least 1 minute');
    if (stored) {
      const next = fields.has('rotation_period') ? new Date(Date.now() + period * 1000).toISOString() : stored.next_rotation;
      await STATIC_ROLES.put(engine.storage, name, { ...stored, rotation_period: period, next_rotation: next });
    } else {
      await rotate(engine, engine.storage, name, { username, user_id: '', rotation_period: period, access_key: '', secret_key: '', last_rotation: '', next_rotation: '' });
    }
    return undefined;
  });
}

/**
 * Rotates every static role whose time has come: the backend's periodic work. A role is due by
 * what storage holds under its lock, and its rotation is stored before the lock goes, so a replica
 * that takes the lock next sees it and leaves the role alone until its next due time.
 */
export async function rotateDueStaticRoles(engine: CloudEngine, storage: StorageView): Promise<void> {
  for (const name of await STATIC_ROLES.list(storage)) {
    await withRoleLock(engine, name, async () => {
      const role = await STATIC_ROLES.getStored(storage, name);
      if (!role || Date.parse(role.next_rotation) > Date.now()) return;
      await rotate(engine, storage, name, role).catch((err: unknown) => {
        engine.context.logger.warn({ mount: engine.mount.path, role: name, error: err instanceof ServiceError ? err.message : 'internal error' }, 'static role rotation failed; it will be retried');
      });
    });
  }
}

export function staticRolePaths(engine: CloudEngine): PathDeclaration[] {
  return [
    listPath({ pattern: 'static-roles/', synopsis: 'Lists the static roles.', summary: 'List the static roles.', names: () => STATIC_ROLES.list(engine.storage) }),
    {
      pattern: 'static-roles/:name',
      synopsis: 'Manages static roles: existing IAM users whose access key the engine rotates.',
      fields: STATIC_ROLE_FIELDS,
      existenceCheck: (_req, fields) => STATIC_ROLES.has(engine.storage, fields.params.name),
      operations: {
        read: {
          summary: 'Read a static role.',
          handler: async (_req, fields) => {
            const role = await STATIC_ROLES.get(engine.storage, fields.params.name);
            return role ? { data: { name: fields.params.name, username: role.username, rotation_period: role.rotation_period } } : undefined;
          },
        },
        create: { summary: 'Create a static role; its key is rotated at once.', handler: (_req, fields) => writeStaticRole(engine, fields) },
        update: { summary: 'Update a static role; a new rotation_period counts from now.', handler: (_req, fields) => writeStaticRole(engine, fields) },
        delete: {
          summary: 'Delete a static role and the access key it made. The user stays: remove it yourself.',
          handler: (_req, fields) =>
            changeStaticRole(engine, fields.params.name, async (role) => {
              if (!role) return undefined;
              const { iam, IAM, secrets } = await engine.clients();
              await callProvider(`delete the access key of ${role.username}`, secrets, () =>
                unlessGone(iam.send(new IAM.DeleteAccessKeyCommand({ UserName: role.username, AccessKeyId: role.access_key }))),
              );
              await STATIC_ROLES.delete(engine.storage, fields.params.name);
              return undefined;
            }),
        },
      },
    },
    {
      pattern: 'static-creds/:name',
      synopsis: 'The current access key of a static role.',
      fields: ROLE_NAME,
      operations: {
        read: {
          summary: 'Read the current access key.',
          handler: async (_req, fields) => {
            const role = await STATIC_ROLES.get(engine.storage, fields.params.name);
            return role ? { data: { access_key: role.access_key, secret_key: role.secret_key } } : undefined;
          },
        },
      },
    },
  ];
}
