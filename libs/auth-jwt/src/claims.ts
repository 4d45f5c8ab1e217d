/** What a verified token's claims must hold for a role, and what a login records of them. */
import { tokenAuth, type AuthResponse } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { JwtRole } from './records';
import type { Claims } from './verification';

/**
 * A claim by name, or by JSON pointer (RFC 6901: "/address/country") when `pointer` is true, which
 * it is for names starting with "/". Only the claims' own members count.
 */
export function claimAt(claims: Claims, name: string, pointer = name.startsWith('/')): unknown {
  const steps = pointer ? name.split('/').slice(1).map((step) => step.replaceAll('~1', '/').replaceAll('~0', '~')) : [name];
  let value: unknown = claims;
  for (const step of steps) {
    if (Array.isArray(value) && /^(0|[1-9]\d*)$/.test(step)) value = value[Number(step)];
    else if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, step)) value = (value as Claims)[step];
    else return undefined;
  }
  return value;
}

/** A string, number or boolean as text. */
function scalarText(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)) ? String(value) : undefined;
}

/** Whether `text` matches `pattern`, where each `*` stands for any run of characters. */
export function globMatches(pattern: string, text: string): boolean {
  const [first, ...rest] = pattern.split('*');
  if (rest.length === 0) return pattern === text;
  const last = rest.pop()!;
  if (!text.startsWith(first) || text.length < first.length + last.length || !text.endsWith(last)) return false;
  let position = first.length;
  const end = text.length - last.length;
  for (const part of rest) {
    const found = text.indexOf(part, position);
    if (found < 0 || found + part.length > end) return false;
    position = found + part.length;
  }
  return true;
}

const refuse = (reason: string) => ServiceError.forbidden(`permission denied: ${reason}`);

/** The role's bound_claims: each claim (one value, or any of a list) must match one of its bound values. */
export function checkBoundClaims(role: JwtRole, claims: Claims): void {
  const matches = role.bound_claims_type === 'glob' ? globMatches : (bound: string, value: string) => bound === value;
  for (const [name, bound] of Object.entries(role.bound_claims)) {
    const value = claimAt(claims, name);
    const values = (Array.isArray(value) ? value : [value]).map(scalarText).filter((text) => text !== undefined);
    if (values.length === 0) throw refuse(`the claim "${name}" is missing or holds no string`);
    const wanted = typeof bound === 'string' ? [bound] : bound;
    if (!wanted.some((pattern) => values.some((text) => matches(pattern, text)))) throw refuse(`the claim "${name}" does not match any of its bound values`);
  }
}

export interface LoginIdentity {
  /** The user claim's value: the entity alias's name. */
  name: string;
  /** From claim_mappings, and the role. */
  metadata: Record<string, string>;
  /** The groups claim's values. */
  groups: string[];
}

/** Who the claims say logged in; 400 when a claim the role needs is missing or of the wrong kind. */
export function loginIdentity(roleName: string, role: JwtRole, claims: Claims): LoginIdentity {
  const user = claimAt(claims, role.user_claim, role.user_claim_json_pointer);
  if (user === undefined || user === null) throw ServiceError.badRequest(`claim "${role.user_claim}" (user_claim) not found in the token`);
  const name = typeof user === 'boolean' ? undefined : scalarText(user);
  if (!name) throw ServiceError.badRequest(`claim "${role.user_claim}" (user_claim) is not a non-empty string`);
  const metadata: Record<string, string> = {};
  for (const [claim, key] of Object.entries(role.claim_mappings)) {
    const value = claimAt(claims, claim);
    if (value === undefined) continue;
    const text = scalarText(value);
    if (text === undefined) throw ServiceError.badRequest(`claim "${claim}" (claim_mappings) is not a string, number or boolean`);
    metadata[key] = text;
  }
  metadata.role = roleName;
  return { name, metadata, groups: role.groups_claim ? groupsOf(role.groups_claim, claims) : [] };
}

function groupsOf(groupsClaim: string, claims: Claims): string[] {
  const value = claimAt(claims, groupsClaim);
  if (value === undefined) throw ServiceError.badRequest(`claim "${groupsClaim}" (groups_claim) not found in the token`);
  const groups = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(groups) || !groups.every((group) => typeof group === 'string')) {
    throw ServiceError.badRequest(`claim "${groupsClaim}" (groups_claim) is not a list of strings`);
  }
  return [...new Set(groups.filter((group) => group !== ''))];
}

/** The auth of a login with a verified token: the role's bindings hold, its identity is recorded. */
export function loginAuth(roleName: string, role: JwtRole, claims: Claims): AuthResponse {
  checkBoundClaims(role, claims);
  const identity = loginIdentity(roleName, role, claims);
  return tokenAuth(role, {
    displayName: identity.name,
    metadata: identity.metadata,
    alias: { name: identity.name, metadata: identity.metadata },
    groupAliases: identity.groups,
    internalData: { role: roleName },
  });
}
