/** Principal ARNs as GetCallerIdentity answers them (Vault's parseIamArn). */
import { ServiceError } from '@svc/api-contract';

export interface Principal {
  partition: string;
  account: string;
  /** `user`, `role`, `assumed-role` or `instance-profile`. */
  type: string;
  /** The path between the type and the name (`/` when none); assumed roles have none. */
  path: string;
  friendlyName: string;
  /** The session of an assumed role. */
  session: string;
}

const TYPES = new Set(['user', 'role', 'assumed-role', 'instance-profile']);

export function parsePrincipal(arn: string): Principal {
  const parts = arn.split(':');
  if (parts.length < 6 || parts[0] !== 'arn' || !/^\d{12}$/.test(parts[4])) throw ServiceError.badRequest(`unrecognized principal ARN "${arn}"`);
  const [, partition, service, , account] = parts;
  const resource = parts.slice(5).join(':').split('/');
  const type = resource[0];
  if (!TYPES.has(type) || resource.length < 2 || (service !== 'iam' && service !== 'sts')) throw ServiceError.badRequest(`unrecognized principal ARN "${arn}"`);
  if (type === 'assumed-role') {
    if (resource.length < 3) throw ServiceError.badRequest(`unrecognized assumed-role ARN "${arn}"`);
    return { partition, account, type, path: '/', friendlyName: resource[1], session: resource.slice(2).join('/') };
  }
  const path = resource.length > 2 ? `/${resource.slice(1, -1).join('/')}/` : '/';
  return { partition, account, type, path, friendlyName: resource[resource.length - 1], session: '' };
}

/** The ARN bindings match: an assumed role's session is its role; paths are dropped. */
export function canonicalArn(principal: Principal): string {
  const type = principal.type === 'assumed-role' ? 'role' : principal.type;
  return `arn:${principal.partition}:iam::${principal.account}:${type}/${principal.friendlyName}`;
}

/** `arn:...:role/a/b/name` → whether a trailing `*` pattern covers an ARN. */
export function arnMatches(pattern: string, arn: string): boolean {
  return pattern.endsWith('*') ? arn.startsWith(pattern.slice(0, -1)) : pattern === arn;
}
