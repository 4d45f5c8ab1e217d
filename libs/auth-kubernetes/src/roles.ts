/** Roles (`role/:name`): which service accounts may log in, and what their tokens get. */
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
  type TokenSettings,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { RecordStore, type StorageView } from '@svc/storage';
import { LabelSelectorError, parseLabelSelector, selectorMatches } from './label-selector';

export const ALIAS_NAME_SOURCES = ['serviceaccount_uid', 'serviceaccount_name'] as const;
export type AliasNameSource = (typeof ALIAS_NAME_SOURCES)[number];

export interface KubernetesRole extends TokenSettings {
  bound_service_account_names: string[];
  bound_service_account_namespaces: string[];
  /** A label selector as written (JSON or YAML); '' for none. */
  bound_service_account_namespace_selector: string;
  audience: string;
  alias_name_source: AliasNameSource;
}

type RoleOwnFields = Omit<KubernetesRole, keyof TokenSettings>;

const ROLE_DEFAULTS: RoleOwnFields = {
  bound_service_account_names: [],
  bound_service_account_namespaces: [],
  bound_service_account_namespace_selector: '',
  audience: '',
  alias_name_source: 'serviceaccount_uid',
};

/** A service account as Kubernetes vouched for it. */
export interface ServiceAccount {
  namespace: string;
  name: string;
  uid: string;
  /** The secret a legacy (secret-based) token belongs to; '' for projected tokens. */
  secretName: string;
}

export const ROLES = new RecordStore<KubernetesRole>('role/');

const ROLE_NAME: FieldMap = { name: { type: 'string', description: 'Name of the role (case-insensitive).' } };

const ROLE_FIELDS: FieldMap = {
  bound_service_account_names: {
    type: 'comma-string-list',
    description: 'Service account names that may log in; required. `*` alone allows any name; a name may hold `*` wildcards (e.g. `web-*`).',
  },
  bound_service_account_namespaces: {
    type: 'comma-string-list',
    description: 'Namespaces whose service accounts may log in; `*` alone allows any, and names may hold `*` wildcards. This or the namespace selector is required.',
  },
  bound_service_account_namespace_selector: {
    type: 'string',
    description:
      'A Kubernetes label selector (JSON or YAML, e.g. `{"matchLabels":{"team":"shop"}}`) that the namespace of a service account may match instead. ' +
      'Matching reads the namespace from the API server with the token reviewer JWT, which needs permission to get namespaces.',
  },
  audience: { type: 'string', description: 'An audience the JWT must be issued for (its `aud`); it is also the audience of the TokenReview. Empty: any.' },
  alias_name_source: {
    type: 'string',
    allowed: ALIAS_NAME_SOURCES,
    description: 'The entity alias name of a login: `serviceaccount_uid` (the account\'s uid; default) or `serviceaccount_name` (`<namespace>/<name>`).',
  },
  ...TOKEN_FIELDS,
};

/** Whether `value` matches a pattern in which `*` stands for any run of characters. */
function globMatches(pattern: string, value: string): boolean {
  const [first, ...rest] = pattern.split('*');
  if (rest.length === 0) return pattern === value;
  const last = rest.pop()!;
  if (!value.startsWith(first) || !value.endsWith(last) || value.length < first.length + last.length) return false;
  let at = first.length;
  for (const middle of rest) {
    const found = value.indexOf(middle, at);
    if (found < 0 || found + middle.length > value.length - last.length) return false;
    at = found + middle.length;
  }
  return true;
}

const anyMatches = (patterns: string[], value: string) => patterns.some((pattern) => globMatches(pattern, value));

/**
 * Why the role does not bind the account, or undefined when it does. A namespace outside the
 * listed ones may still match the selector: `namespaceLabels` reads its labels (undefined: no such namespace).
 */
export async function bindingProblem(
  roleName: string,
  role: KubernetesRole,
  account: Pick<ServiceAccount, 'namespace' | 'name'>,
  namespaceLabels: (namespace: string) => Promise<Record<string, string> | undefined>,
): Promise<string | undefined> {
  if (!anyMatches(role.bound_service_account_names, account.name)) return `service account name "${account.name}" is not bound by role "${roleName}"`;
  if (anyMatches(role.bound_service_account_namespaces, account.namespace)) return undefined;
  if (role.bound_service_account_namespace_selector !== '') {
    const labels = await namespaceLabels(account.namespace);
    if (labels && selectorMatches(parseLabelSelector(role.bound_service_account_namespace_selector), labels)) return undefined;
  }
  return `namespace "${account.namespace}" is not bound by role "${roleName}"`;
}

/** The alias a login of the account gets under the role. */
export function aliasName(role: KubernetesRole, account: ServiceAccount): string {
  return role.alias_name_source === 'serviceaccount_name' ? `${account.namespace}/${account.name}` : account.uid;
}

/** A list of names or globs as written: trimmed, blanks dropped, `*` alone or not at all. */
function boundList(field: string, values: string[]): string[] {
  const list = values.map((value) => value.trim()).filter(Boolean);
  if (list.length > 1 && list.includes('*')) throw ServiceError.badRequest(`field "${field}": "*" cannot be combined with other values`);
  return list;
}

/** The role a write leaves: fields sent replace the stored ones, the others stay (or take their defaults on create). */
function readRole(f: FieldData, existing: KubernetesRole | null): KubernetesRole {
  const own = <K extends keyof RoleOwnFields>(name: K): RoleOwnFields[K] => (f.has(name) ? f.get<RoleOwnFields[K]>(name) : (existing ?? ROLE_DEFAULTS)[name]);
  if (!existing && !f.has('bound_service_account_names')) throw ServiceError.badRequest('missing required field "bound_service_account_names"');
  const names = boundList('bound_service_account_names', own('bound_service_account_names'));
  if (names.length === 0) throw ServiceError.badRequest('field "bound_service_account_names" cannot be empty');
  const namespaces = boundList('bound_service_account_namespaces', own('bound_service_account_namespaces'));
  const selector = own('bound_service_account_namespace_selector').trim();
  if (namespaces.length === 0 && selector === '') {
    throw ServiceError.badRequest('one of "bound_service_account_namespaces" and "bound_service_account_namespace_selector" must be set');
  }
  if (selector !== '') {
    try {
      parseLabelSelector(selector);
    } catch (err) {
      if (err instanceof LabelSelectorError) throw ServiceError.badRequest(`field "bound_service_account_namespace_selector": ${err.message}`);
      throw err;
    }
  }
  return {
    bound_service_account_names: names,
    bound_service_account_namespaces: namespaces,
    bound_service_account_namespace_selector: selector,
    audience: own('audience').trim(),
    alias_name_source: own('alias_name_source'),
    ...readTokenSettings(f, existing ?? DEFAULT_TOKEN_SETTINGS),
  };
}

/** Without an audience, a token a service account was given for any other service logs in as well. */
const NO_AUDIENCE_WARNING =
  'the role sets no "audience": a token of a bound service account logs in whatever audience it was issued for; set one (e.g. "vault") to require tokens issued for this server';

export function rolePaths(storage: StorageView): PathDeclaration[] {
  const roleName = (f: FieldData) => f.params.name.toLowerCase();
  const writeRole = async (f: FieldData): Promise<Response | undefined> => {
    const role = readRole(f, await ROLES.get(storage, roleName(f)));
    await ROLES.put(storage, roleName(f), role);
    return role.audience === '' ? { warnings: [NO_AUDIENCE_WARNING] } : undefined;
  };
  return recordPaths<KubernetesRole>({
    collection: 'role',
    param: 'name',
    synopsis: 'Creates, reads, updates or deletes a role: the service accounts it binds and the tokens their logins get.',
    description:
      'A login names a role; it succeeds when the service account Kubernetes vouches for has a name in bound_service_account_names ' +
      'and a namespace in bound_service_account_namespaces or matching bound_service_account_namespace_selector. ' +
      'An update changes only the fields it sends.',
    fields: { ...ROLE_NAME, ...ROLE_FIELDS },
    name: roleName,
    get: (name) => ROLES.get(storage, name),
    names: () => ROLES.list(storage),
    remove: (name) => ROLES.delete(storage, name),
    shown: (role) => ({ ...tokenSettingsData(role) }),
    write: (f) => writeRole(f),
  });
}
