/**
 * Role tags (Vault's v1 format): `v1:<nonce>:r=<role>:d=<bool>:m=<bool>[:p=<policies>][:t=<max ttl>][:i=<instance>]:<HMAC>`,
 * the HMAC-SHA256 of everything before it under the role's own key. An instance carrying one in
 * its tag `role_tag` logs in with the tag's narrower settings.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { RoleRecord } from './records';

export interface RoleTag {
  role: string;
  policies: string[];
  /** Seconds; 0 for the role's. */
  maxTtl: number;
  instanceId: string;
  disallowReauthentication: boolean;
  allowInstanceMigration: boolean;
}

const VERSION = 'v1';

function mac(key: string, text: string): string {
  return createHmac('sha256', Buffer.from(key, 'base64')).update(text).digest('base64');
}

export function createRoleTag(role: RoleRecord, tag: RoleTag): string {
  const parts = [VERSION, randomBytes(12).toString('base64url'), `r=${tag.role}`, `d=${tag.disallowReauthentication}`, `m=${tag.allowInstanceMigration}`];
  if (tag.policies.length) parts.push(`p=${tag.policies.join(',')}`);
  if (tag.maxTtl > 0) parts.push(`t=${tag.maxTtl}`);
  if (tag.instanceId) parts.push(`i=${tag.instanceId}`);
  const text = parts.join(':');
  return `${text}:${mac(role.hmac_key, text)}`;
}

/** The role a tag names (to find its key), before its HMAC is checked. */
export function taggedRole(value: string): string {
  const role = value.split(':').find((part) => part.startsWith('r='));
  if (!value.startsWith(`${VERSION}:`) || !role) throw ServiceError.badRequest('invalid role tag: not a v1 role tag');
  return role.slice(2);
}

/** A tag's settings once its HMAC under the role's key checks out. */
export function verifyRoleTag(role: RoleRecord, value: string): RoleTag {
  const end = value.lastIndexOf(':');
  const text = value.slice(0, end);
  const expected = Buffer.from(mac(role.hmac_key, text));
  const given = Buffer.from(value.slice(end + 1));
  if (end < 0 || given.length !== expected.length || !timingSafeEqual(given, expected)) throw ServiceError.forbidden('role tag signature verification failed');
  const fields = Object.fromEntries(
    text
      .split(':')
      .slice(2)
      .map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)]),
  );
  return {
    role: fields.r ?? '',
    policies: fields.p ? fields.p.split(',') : [],
    maxTtl: Number(fields.t ?? 0),
    instanceId: fields.i ?? '',
    disallowReauthentication: fields.d === 'true',
    allowInstanceMigration: fields.m === 'true',
  };
}
