/** `login`: a JWT, verified against the configured keys and a jwt role's bindings. */
import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { loginAuth } from './claims';
import { checkSourceAddress, type JwtAuth } from './method';
import { roleExpectations, verifiedClaims } from './verification';

export function loginPath(method: JwtAuth): PathDeclaration {
  return {
    pattern: 'login',
    synopsis: 'Logs in with a signed JWT.',
    description:
      'The token must verify with the configured keys, be within its lifetime (with the role\'s leeways), come from the bound issuer ' +
      '(or the discovered one), and meet the role\'s audience, subject and claim bindings. Only roles of role_type "jwt" take these logins.',
    fields: {
      role: { type: 'string', description: 'The role to log in with; default the configured default_role.' },
      jwt: { type: 'string', sensitive: true, required: true, description: 'The signed JWT.' },
    },
    operations: {
      update: {
        summary: 'Log in with a JWT.',
        unauthenticated: true,
        handler: async (req, f) => {
          const config = await method.requireConfig();
          const { name, role } = await method.loginRole(config, f.get('role') ?? '');
          if (role.role_type !== 'jwt') throw ServiceError.badRequest(`role "${name}" has role_type "oidc": JWT logins need a role of role_type "jwt"`);
          checkSourceAddress(role, req);
          const provider = await method.provider(config);
          const claims = await verifiedClaims(f.get('jwt'), 'jwt', provider, roleExpectations(config, role, config.bound_issuer || provider.issuer));
          return { auth: loginAuth(name, role, claims) };
        },
      },
    },
  };
}
