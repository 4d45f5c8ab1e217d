import type { BackendFactory, EngineContext } from '@svc/engine-host';
import { Backend, renewedAuth, type BackendDeclaration, type MountInfo } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { configPaths } from './config';
import { loginPath } from './login';
import { JwtAuth, jwtAuthSettings, type JwtAuthOptions } from './method';
import { oidcPaths, removeExpiredFlows } from './oidc';
import { rolePaths } from './roles';

const HELP =
  'The jwt/oidc auth method: users log in through an OpenID Connect provider in their browser (oidc/auth_url, ' +
  'then oidc/callback; roles of role_type "oidc"), and workloads with a JWT signed by a key the method trusts ' +
  '(login; roles of role_type "jwt"). The keys come from the provider\'s discovery document, a JWKS URL or ' +
  'public keys in the config; roles bind audiences, subject and claims, and map claims to metadata and groups.';

/** The method's paths for a mount of type "jwt" or "oidc" (the same method under either name). */
export function jwtAuthDeclaration(mount: MountInfo, context: EngineContext, options: JwtAuthOptions = {}): BackendDeclaration {
  const method = new JwtAuth(context, jwtAuthSettings(options));
  return {
    type: mount.type,
    help: HELP,
    paths: [...configPaths(method), ...rolePaths(method), loginPath(method), ...oidcPaths(method)],
    // The role must still exist; the token takes its current policies and TTLs.
    renewAuth: async (_req, auth) => {
      const name = String(auth.internalData?.role ?? '');
      const role = await method.role(name);
      if (!role) throw ServiceError.badRequest(`role "${name}" no longer exists; the token cannot be renewed`);
      return renewedAuth(role, auth);
    },
    // OIDC logins started and never completed.
    periodic: () => removeExpiredFlows(method),
  };
}

/** The factory of the method's backends, with its deadlines and lifetimes (tests shorten them). */
export function createJwtBackendFactory(options: JwtAuthOptions = {}): BackendFactory {
  return (mount, context) => new Backend(jwtAuthDeclaration(mount, context, options));
}

export const jwtBackendFactory: BackendFactory = createJwtBackendFactory();
