import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, type BackendDeclaration } from '@svc/framework';
import { CloudAuth } from './method';
import { configPaths } from './paths/config-paths';
import { loginPath, renewIamAuth } from './paths/login-path';
import { rolePaths } from './paths/role-paths';

const HELP =
  'The cloud auth method: principals of the cloud provider log in with a signed sts:GetCallerIdentity ' +
  'request (iam), which the method forwards to STS and binds to a role (`role/:role`). Configure the ' +
  'provider access (`config/client`), the identity aliases (`config/identity`), certificates, ' +
  'cross-account roles (`config/sts/:account_id`) and tidy settings.';

export function cloudAuthDeclaration(method: CloudAuth): BackendDeclaration {
  return {
    type: 'cloud',
    help: HELP,
    paths: [...configPaths(method), ...rolePaths(method), loginPath(method)],
    renewAuth: (_req, auth) => renewIamAuth(method, auth),
    cleanup: () => {
      method.close();
      return Promise.resolve();
    },
  };
}

/** One cloud auth mount in one service replica; its cleanup drops its provider clients. */
export class CloudAuthBackend extends Backend {
  constructor(context: EngineContext) {
    super(cloudAuthDeclaration(new CloudAuth(context)));
  }
}

export const cloudAuthBackendFactory: BackendFactory = (_mount, context) => new CloudAuthBackend(context);
