import type { BackendFactory } from '@svc/engine-host';
import { Backend, type BackendDeclaration } from '@svc/framework';
import type { StorageView } from '@svc/storage';
import { configPath } from './config';
import { loginPath, renewKubernetesAuth, type LoginSettings } from './login';
import { rolePaths } from './roles';

const HELP =
  'The kubernetes auth method: workloads log in with the JWT of their Kubernetes service account. ' +
  'The method asks the cluster\'s TokenReview API whether the JWT is good (or verifies it against configured ' +
  'public keys), and a role (`role/:name`) decides which service accounts and namespaces may log in and what ' +
  'their tokens get. Configure the API server with `config`.';

/** An API server that has not answered in this long is not going to; the client's login waits no longer. */
export const API_DEADLINE_MS = 10_000;

export interface KubernetesAuthOptions {
  /** Deadline of each exchange with the Kubernetes API server, in milliseconds (default API_DEADLINE_MS). */
  apiDeadlineMs?: number;
}

export function kubernetesDeclaration(storage: StorageView, { apiDeadlineMs = API_DEADLINE_MS }: KubernetesAuthOptions = {}): BackendDeclaration {
  const settings: LoginSettings = { storage, apiDeadlineMs };
  return {
    type: 'kubernetes',
    help: HELP,
    paths: [configPath(storage), ...rolePaths(storage), loginPath(settings)],
    renewAuth: (_req, auth) => renewKubernetesAuth(settings, auth),
  };
}

/** The factory of kubernetes mounts with other options than the defaults (a test's short deadline). */
export function kubernetesBackendFactoryWith(options: KubernetesAuthOptions): BackendFactory {
  return (_mount, context) => new Backend(kubernetesDeclaration(context.storage, options));
}

export const kubernetesBackendFactory: BackendFactory = kubernetesBackendFactoryWith({});
