import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, type BackendDeclaration, type MountInfo, type Request, type Response } from '@svc/framework';
import { DatabaseEngine } from './engine';
import { configPaths } from './paths/config-paths';
import { STATEMENT_FIELD_NAMES } from './paths/role-fields';
import { credsSecret, rolePaths } from './paths/role-paths';
import { staticRolePaths } from './paths/static-role-paths';

const HELP =
  'The database secrets engine issues database credentials. Configure a connection (`config/:name`) ' +
  'with a plugin (postgresql-database-plugin, mysql-database-plugin, redis-database-plugin), then either ' +
  'dynamic roles (`roles/:name`), whose `creds/:name` create a short-lived user under a lease, or static ' +
  'roles (`static-roles/:name`), which rotate the password of an existing user (`static-creds/:name`).';

export function databaseDeclaration(engine: DatabaseEngine): BackendDeclaration {
  return {
    type: 'database',
    help: HELP,
    paths: [...configPaths(engine), ...rolePaths(engine), ...staticRolePaths(engine)],
    secrets: { creds: credsSecret(engine) },
    periodic: () => engine.rotations.periodic(),
    cleanup: () => engine.close(),
  };
}

/** A single statement sent as a string is a one-element list, as Vault reads it. */
function withStatementLists(data: Record<string, unknown>): Record<string, unknown> {
  const lists = STATEMENT_FIELD_NAMES.filter((name) => typeof data[name] === 'string').map((name) => [name, [data[name]]]);
  return lists.length === 0 ? data : { ...data, ...Object.fromEntries(lists) };
}

/**
 * One database mount in one service replica. It keeps the connection pools and the static-role
 * rotation timer; cleanup ends both (the host runs it when the mount goes away, tests after use).
 */
export class DatabaseBackend extends Backend {
  constructor(mount: MountInfo, context: EngineContext) {
    super(databaseDeclaration(new DatabaseEngine(mount, context)));
  }

  override handle(req: Request): Promise<Response | undefined> {
    return super.handle({ ...req, data: withStatementLists(req.data) });
  }
}

export const databaseBackendFactory: BackendFactory = (mount, context) => new DatabaseBackend(mount, context);
