import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, type BackendDeclaration, type MountInfo } from '@svc/framework';
import { CloudAuth } from './method';
import { configPaths } from './paths/config-paths';
import { listPaths, periodicTidy } from './paths/list-paths';
import { loginPath, renewCloudAuth } from './paths/login-path';
import { rolePaths } from './paths/role-paths';

const HELP =
  'The cloud auth method: principals of the cloud provider log in with a signed sts:GetCallerIdentity ' +
  'request (iam), which the method forwards to STS, and instances with a signed identity document (vm); ' +
  'either is bound to a role (`role/:role`). Configure the ' +
  'provider access (`config/client`), the identity aliases (`config/identity`), certificates, ' +
  'cross-account roles (`config/sts/:account_id`) and tidy settings.';

export function cloudAuthDeclaration(method: CloudAuth): BackendDeclaration {
  return {
    type: 'cloud',
    help: HELP,
    paths: [...configPaths(method), ...rolePaths(method), ...listPaths(method), loginPath(method)],
    renewAuth: (_req, auth) => renewCloudAuth(method, auth),
    // Tidy of the access and deny lists, on one replica (the core runs periodic functions under a lock).
    periodic: () => periodicTidy(method),
    cleanup: () => {
      method.close();
      return Promise.resolve();
    },
  };
}

/** One cloud auth mount in one service replica; its cleanup drops its provider clients. */
export class CloudAuthBackend extends Backend {
  constructor(mount: MountInfo, context: EngineContext) {
    super(cloudAuthDeclaration(new CloudAuth(mount, context)));
  }
}

export const cloudAuthBackendFactory: BackendFactory = (mount, context) => new CloudAuthBackend(mount, context);
