import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, type BackendDeclaration, type MountInfo } from '@svc/framework';
import { CloudEngine } from './engine';
import { rollbackAbandonedUsers } from './iam-users';
import { configPaths } from './paths/config-paths';
import { accessKeysSecret, credsPaths, SECRET_TYPE } from './paths/creds-paths';
import { rolePaths } from './paths/role-paths';
import { rotateDueStaticRoles, staticRolePaths } from './paths/static-role-paths';

const HELP =
  'The cloud-credential engine issues provider credentials. Configure the credentials it acts with ' +
  '(`config/root`), then roles (`roles/:name`) whose `creds/:name` and `sts/:name` create IAM users under ' +
  'a lease, assume roles or get federation tokens, and static roles (`static-roles/:name`) that rotate the ' +
  'access key of an existing user (`static-creds/:name`).';

export function cloudDeclaration(engine: CloudEngine): BackendDeclaration {
  return {
    type: 'cloud',
    help: HELP,
    paths: [...configPaths(engine), ...rolePaths(engine), ...credsPaths(engine), ...staticRolePaths(engine)],
    secrets: { [SECRET_TYPE]: accessKeysSecret(engine) },
    periodic: async () => {
      await rollbackAbandonedUsers(await engine.clients(), engine.storage, engine.context.logger);
      await rotateDueStaticRoles(engine, engine.storage);
    },
    cleanup: () => {
      engine.close();
      return Promise.resolve();
    },
  };
}

/** One cloud-credential mount in one service replica; its cleanup drops its provider clients. */
export class CloudBackend extends Backend {
  constructor(mount: MountInfo, context: EngineContext) {
    super(cloudDeclaration(new CloudEngine(mount, context)));
  }
}

export const cloudBackendFactory: BackendFactory = (mount, context) => new CloudBackend(mount, context);
