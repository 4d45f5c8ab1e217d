/** static-roles/:name, static-creds/:name and rotate-role/:name: existing users whose passwords the engine rotates. */
import { listPath, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { checkRoleAllowed } from '../connections';
import { merged, statements, type DatabaseEngine } from '../engine';
import { STATIC_ROLES, type StaticRoleRecord } from '../records';
import { checkSchedule, nextRotation } from '../schedule';
import { checkCredentialSupported, credentialSettings, CREDENTIAL_FIELDS, ROLE_NAME, visibleCredentialConfig } from './role-fields';

const STATIC_ROLE_FIELDS: FieldMap = {
  ...ROLE_NAME,
  ...CREDENTIAL_FIELDS,
  username: { type: 'string', description: 'Existing database user whose password is rotated. Required when creating; cannot change.' },
  rotation_period: { type: 'duration', description: 'Rotate this often (at least 5s). Exclusive with rotation_schedule.' },
  rotation_schedule: { type: 'string', description: 'Rotate on this five-field cron schedule (UTC). Exclusive with rotation_period.' },
  rotation_window: { type: 'duration', description: 'With rotation_schedule: how long after a scheduled time a rotation may still run (at least 1h).' },
  rotation_statements: { type: 'list', default: [], description: "Statements that set the new password; empty for the plugin's default." },
};

const STATIC_CREDENTIAL_TYPES = ['password', 'rsa_private_key'];

/** The schedule fields of a write: setting one of period and schedule clears the other. */
function scheduleOf(fields: FieldData, stored: StaticRoleRecord | null): Pick<StaticRoleRecord, 'rotation_period' | 'rotation_schedule' | 'rotation_window'> {
  const sentPeriod = fields.has('rotation_period');
  const sentSchedule = fields.has('rotation_schedule');
  if (sentPeriod || sentSchedule) {
    return {
      rotation_period: sentPeriod ? fields.get<number>('rotation_period') : undefined,
      rotation_schedule: sentSchedule ? fields.get<string>('rotation_schedule') : undefined,
      rotation_window: fields.has('rotation_window') ? fields.get<number>('rotation_window') : undefined,
    };
  }
  return {
    rotation_period: stored?.rotation_period,
    rotation_schedule: stored?.rotation_schedule,
    rotation_window: fields.has('rotation_window') ? fields.get<number>('rotation_window') : stored?.rotation_window,
  };
}

function describeSchedule(role: StaticRoleRecord): Record<string, unknown> {
  return role.rotation_period !== undefined
    ? { rotation_period: role.rotation_period }
    : { rotation_schedule: role.rotation_schedule, rotation_window: role.rotation_window ?? 0 };
}

function describeStaticRole(role: StaticRoleRecord): Record<string, unknown> {
  return {
    db_name: role.db_name,
    username: role.username,
    credential_type: role.credential_type,
    credential_config: visibleCredentialConfig(role.credential_config),
    rotation_statements: role.rotation_statements,
    ...describeSchedule(role),
    last_service_rotation: role.last_rotation,
    next_service_rotation: role.next_rotation,
    ...(role.last_rotation_error ? { last_rotation_error: role.last_rotation_error } : {}),
  };
}

async function writeStaticRole(engine: DatabaseEngine, fields: FieldData): Promise<undefined> {
  const name = fields.params.name;
  const stored = await STATIC_ROLES.get(engine.storage, name);
  const username = merged<string>(fields, 'username', stored?.username);
  if (!username) throw ServiceError.badRequest('missing required field "username"');
  if (stored && username !== stored.username) throw ServiceError.badRequest('field "username": cannot be changed on an existing static role');
  const credential = credentialSettings(fields, stored);
  if (stored && credential.db_name !== stored.db_name) throw ServiceError.badRequest('field "db_name": cannot be changed on an existing static role');
  if (!STATIC_CREDENTIAL_TYPES.includes(credential.credential_type)) {
    throw ServiceError.badRequest(`field "credential_type": static roles support ${STATIC_CREDENTIAL_TYPES.join(', ')}`);
  }
  const schedule = scheduleOf(fields, stored);
  checkSchedule(schedule);
  const connection = await engine.connections.get(engine.storage, credential.db_name);
  checkRoleAllowed(connection.record, credential.db_name, name);
  checkCredentialSupported(connection, credential.credential_type);

  const rotationStatements = statements(fields, 'rotation_statements', stored?.rotation_statements);
  if (!stored) {
    // The engine must know the password, so it sets one at creation; a failure stores nothing.
    const now = new Date().toISOString();
    const role: StaticRoleRecord = { ...credential, username, rotation_statements: rotationStatements, ...schedule, credential: {}, last_rotation: now, next_rotation: now, fence: 0 };
    await engine.rotations.rotateNow(name, { kind: 'create', role });
    return undefined;
  }
  const scheduleChanged = schedule.rotation_period !== stored.rotation_period || schedule.rotation_schedule !== stored.rotation_schedule;
  // A new period counts from the last rotation; a new cron schedule from now.
  const from = schedule.rotation_period !== undefined ? new Date(stored.last_rotation) : new Date();
  const updated: StaticRoleRecord = {
    ...stored,
    ...credential,
    ...schedule,
    rotation_statements: rotationStatements,
    next_rotation: scheduleChanged ? nextRotation(schedule, from).toISOString() : stored.next_rotation,
  };
  await STATIC_ROLES.put(engine.storage, name, updated);
  engine.rotations.track(name, updated);
  return undefined;
}

async function requireStaticRole(engine: DatabaseEngine, name: string): Promise<StaticRoleRecord> {
  const role = await STATIC_ROLES.get(engine.storage, name);
  if (!role) throw ServiceError.badRequest(`unknown static role "${name}"`);
  return role;
}

export function staticRolePaths(engine: DatabaseEngine): PathDeclaration[] {
  const write = (_req: Request, fields: FieldData) => writeStaticRole(engine, fields);
  return [
    listPath({ pattern: 'static-roles/', synopsis: 'Lists the static roles.', summary: 'List the static roles.', names: () => STATIC_ROLES.list(engine.storage) }),
    {
      pattern: 'static-roles/:name',
      synopsis: 'Manages static roles: one existing database user whose password the engine rotates.',
      description: 'The password is rotated when the role is created. Deleting the role leaves the database user in place.',
      fields: STATIC_ROLE_FIELDS,
      existenceCheck: (_req, fields) => STATIC_ROLES.has(engine.storage, fields.params.name),
      operations: {
        read: {
          summary: 'Read a static role.',
          handler: async (_req, fields) => {
            const role = await STATIC_ROLES.get(engine.storage, fields.params.name);
            return role ? { data: describeStaticRole(role) } : undefined;
          },
        },
        create: { summary: 'Create a static role and rotate its password.', handler: write },
        update: { summary: 'Update a static role; username and db_name cannot change.', handler: write },
        delete: {
          summary: 'Delete a static role; the database user is not removed.',
          handler: async (_req, fields) => {
            await STATIC_ROLES.delete(engine.storage, fields.params.name);
            engine.rotations.track(fields.params.name, null);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'static-creds/:name',
      synopsis: "Returns a static role's current credentials and when they rotate next.",
      fields: ROLE_NAME,
      operations: {
        read: {
          summary: 'Read the current credentials.',
          handler: async (_req, fields) => {
            const role = await requireStaticRole(engine, fields.params.name);
            const ttl = Math.max(0, Math.floor((Date.parse(role.next_rotation) - Date.now()) / 1000));
            return {
              data: { username: role.username, ...role.credential, last_service_rotation: role.last_rotation, ttl, ...describeSchedule(role) },
            };
          },
        },
      },
    },
    {
      pattern: 'rotate-role/:name',
      synopsis: "Rotates a static role's password now; the next rotation counts from now.",
      fields: ROLE_NAME,
      operations: {
        update: {
          summary: 'Rotate the static role now.',
          handler: async (_req, fields) => {
            await requireStaticRole(engine, fields.params.name);
            await engine.rotations.rotateNow(fields.params.name, { kind: 'manual' });
            return undefined;
          },
        },
      },
    },
  ];
}
