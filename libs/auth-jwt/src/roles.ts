/** role/:name (create, read, update, delete) and role/ (list): which tokens a role accepts, and what it issues. */
import {
  DEFAULT_TOKEN_SETTINGS,
  recordPaths,
  readTokenSettings,
  TOKEN_FIELDS,
  tokenSettingsData,
  type FieldData,
  type FieldMap,
  type PathDeclaration,
  type Response,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { BOUND_CLAIMS_TYPES, ROLE_TYPES, ROLES, type JwtRole } from './records';
import type { JwtAuth } from './method';
import { DEFAULT_LEEWAYS } from './verification';

const LEEWAY = (what: string, seconds: number): FieldMap[string] => ({
  type: 'duration',
  default: seconds,
  description: `Leeway for clock skew when checking ${what}; 0 stands for the default (${seconds} s).`,
});

const ROLE_FIELDS: FieldMap = {
  name: { type: 'string', description: 'Name of the role (lower-cased).' },
  role_type: { type: 'string', allowed: ROLE_TYPES, description: 'oidc (the default): browser logins through the provider; jwt: logins with a JWT.' },
  bound_audiences: { type: 'comma-string-list', description: 'The aud claim must contain one of these. A jwt role that binds none refuses tokens with an aud.' },
  user_claim: { type: 'string', description: 'The claim naming the user: the entity alias\'s name. Required.' },
  user_claim_json_pointer: { type: 'bool', description: 'user_claim is a JSON pointer ("/a/b") into the claims.' },
  bound_subject: { type: 'string', description: 'The sub claim a token must have.' },
  bound_claims: { type: 'map', description: 'Claims (names, or JSON pointers) and the value, or list of values (any of them), each must have.' },
  bound_claims_type: { type: 'string', allowed: BOUND_CLAIMS_TYPES, description: 'string (the default): bound_claims values match exactly; glob: "*" in them matches any run of characters.' },
  claim_mappings: { type: 'kv-pairs', description: 'Claims (names, or JSON pointers) copied to the token and alias metadata, under the key each maps to.' },
  groups_claim: { type: 'string', description: 'The claim (a list of strings) naming the user\'s groups: the group aliases of the login.' },
  oidc_scopes: { type: 'comma-string-list', description: 'Scopes an OIDC login asks for, besides "openid".' },
  allowed_redirect_uris: { type: 'comma-string-list', description: 'The redirect_uri values an OIDC login may use (a loopback one with any port). Required for oidc roles.' },
  verbose_oidc_logging: { type: 'bool', description: 'Log the claims of OIDC logins at debug level (never the tokens). Not for production.' },
  clock_skew_leeway: LEEWAY('every time claim (exp, nbf, iat)', DEFAULT_LEEWAYS.clockSkew),
  expiration_leeway: LEEWAY('exp, on top of clock_skew_leeway', DEFAULT_LEEWAYS.expiration),
  not_before_leeway: LEEWAY('nbf, on top of clock_skew_leeway', DEFAULT_LEEWAYS.notBefore),
  max_age: { type: 'duration', description: 'Longest time since the user last authenticated at the provider an OIDC login accepts; 0: no limit.' },
  ...TOKEN_FIELDS,
};

type OwnFields = Omit<JwtRole, keyof typeof DEFAULT_TOKEN_SETTINGS>;

const OWN_DEFAULTS: OwnFields = {
  role_type: 'oidc',
  bound_audiences: [],
  user_claim: '',
  user_claim_json_pointer: false,
  bound_subject: '',
  bound_claims: {},
  bound_claims_type: 'string',
  claim_mappings: {},
  groups_claim: '',
  oidc_scopes: [],
  allowed_redirect_uris: [],
  verbose_oidc_logging: false,
  clock_skew_leeway: DEFAULT_LEEWAYS.clockSkew,
  expiration_leeway: DEFAULT_LEEWAYS.expiration,
  not_before_leeway: DEFAULT_LEEWAYS.notBefore,
  max_age: 0,
};

const invalid = (field: string, problem: string) => ServiceError.badRequest(`field "${field}": ${problem}`);

/** bound_claims as stored: each value a string or a list of strings. */
function boundClaims(raw: Record<string, unknown>): Record<string, string | string[]> {
  return Object.fromEntries(
    Object.entries(raw).map(([claim, value]) => {
      if (typeof value === 'string' || (Array.isArray(value) && value.length > 0 && value.every((entry) => typeof entry === 'string'))) return [claim, value];
      throw invalid('bound_claims', `the value of "${claim}" must be a string or a non-empty list of strings`);
    }),
  );
}

/** The rules between a role's fields; throws a 400 naming the field at fault. */
export function checkRole(role: JwtRole): void {
  if (!role.user_claim) throw ServiceError.badRequest('missing required field "user_claim"');
  if (role.user_claim_json_pointer && !role.user_claim.startsWith('/')) throw invalid('user_claim', 'a JSON pointer starts with "/"');
  const targets = Object.values(role.claim_mappings);
  if (targets.includes('role')) throw invalid('claim_mappings', 'the metadata key "role" is reserved (the role\'s name)');
  const repeated = targets.find((target, index) => targets.indexOf(target) !== index);
  if (repeated !== undefined) throw invalid('claim_mappings', `several claims map to the metadata key "${repeated}"`);
  for (const uri of role.allowed_redirect_uris) {
    if (!URL.canParse(uri)) throw invalid('allowed_redirect_uris', `"${uri}" is not a URL`);
  }
  if (role.role_type === 'oidc' && role.allowed_redirect_uris.length === 0) throw invalid('allowed_redirect_uris', 'required for role_type "oidc"');
  const bound = role.bound_audiences.length || role.bound_subject || Object.keys(role.bound_claims).length || role.token_bound_cidrs.length;
  if (role.role_type === 'jwt' && !bound) {
    throw ServiceError.badRequest('a jwt role must bind something: bound_audiences, bound_subject, bound_claims or token_bound_cidrs');
  }
}

export function rolePaths(method: JwtAuth): PathDeclaration[] {
  const roleName = (f: FieldData) => f.params.name.toLowerCase();

  async function writeRole(f: FieldData, existing: JwtRole | null): Promise<Response | undefined> {
    const base: JwtRole = existing ?? { ...DEFAULT_TOKEN_SETTINGS, ...OWN_DEFAULTS };
    const own = Object.fromEntries(Object.keys(OWN_DEFAULTS).map((name) => [name, f.has(name) ? f.get(name) : base[name as keyof OwnFields]])) as OwnFields;
    if (f.has('bound_claims')) own.bound_claims = boundClaims(f.get('bound_claims'));
    const role: JwtRole = { ...readTokenSettings(f, base), ...own };
    checkRole(role);
    await ROLES.put(method.storage, roleName(f), role);
    if (!role.verbose_oidc_logging) return undefined;
    return { warnings: ['verbose_oidc_logging is on: the claims of this role\'s OIDC logins are logged at debug level. Not for production.'] };
  }

  return recordPaths<JwtRole>({
    collection: 'role',
    param: 'name',
    synopsis: 'Creates, reads, updates or deletes a role.',
    description: 'A role says which tokens may log in through it (audiences, subject, claims), what a login records (user, groups, metadata) and the tokens it issues.',
    fields: ROLE_FIELDS,
    name: roleName,
    get: (name) => method.role(name),
    names: () => ROLES.list(method.storage),
    remove: (name) => ROLES.delete(method.storage, name),
    shown: (role) => ({ ...tokenSettingsData(role) }),
    write: writeRole,
  });
}
