/**
 * The vm login (Vault's ec2 flow): a signed instance identity document, the instance looked up and
 * bound to the role, the identity access list's nonce rules, role tags and their deny list.
 */
import { randomUUID } from 'node:crypto';
import { renewedAuth, tokenAuth, type AuthResponse, type FieldData } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { pkcs7Document, signedDocument, type IdentityDocument } from '../identity-document';
import { PROVIDER_CERTIFICATES } from '../provider-certificates';
import { checkInstanceBindings, describeInstance, type InstanceFacts } from '../instances';
import type { CloudAuth } from '../method';
import { ACCESS_LIST, CERTIFICATES, type AccessListEntry, type CertificateRecord, type IdentityConfig, type RoleRecord } from '../records';
import { verifyRoleTag, type RoleTag } from '../role-tags';
import { denied } from './list-paths';

const MAX_NONCE_LENGTH = 128;

/** What a vm login keeps on the token for its renewals. */
interface VmLoginData {
  role_name: string;
  role_id: string;
  auth_type: 'vm';
  instance_id: string;
  account_id: string;
  region: string;
  [key: string]: unknown;
}

/** The registered certificates of the type, then the provider's built-in ones. */
async function certificates(method: CloudAuth, type: CertificateRecord['type']): Promise<string[]> {
  const names = await CERTIFICATES.list(method.storage);
  const records = await Promise.all(names.map((name) => CERTIFICATES.get(method.storage, name)));
  const registered = records.filter((record): record is CertificateRecord => record?.type === type).map((record) => record.cloud_public_cert);
  return [...registered, ...PROVIDER_CERTIFICATES[type]];
}

/** The role tag of the instance, checked: present, signed with the role's key, for this role and instance, not denied. */
async function instanceRoleTag(method: CloudAuth, role: RoleRecord, roleName: string, instance: InstanceFacts): Promise<RoleTag | undefined> {
  if (!role.role_tag) return undefined;
  const value = instance.tags[role.role_tag];
  if (!value) throw ServiceError.forbidden(`missing tag with key "${role.role_tag}" on the instance`);
  const tag = verifyRoleTag(role, value);
  if (tag.role !== roleName) throw ServiceError.forbidden(`role tag is for role "${tag.role}", not "${roleName}"`);
  if (tag.instanceId && tag.instanceId !== instance.instanceId) throw ServiceError.forbidden('role tag is for another instance');
  if (await denied(method, value)) throw ServiceError.forbidden('role tag is on the deny list');
  return tag;
}

/**
 * Vault's access-list rules: an instance that logged in before must present the same nonce, unless
 * migration is allowed and the document is newer; never an older document; never again when
 * reauthentication is disallowed.
 */
function checkReauthentication(entry: AccessListEntry, nonce: string | undefined, document: IdentityDocument, allowMigration: boolean): void {
  if (entry.disallow_reauthentication) throw ServiceError.forbidden('reauthentication is disabled');
  const given = Date.parse(document.pendingTime);
  const stored = Date.parse(entry.pending_time);
  if (entry.client_nonce !== nonce) {
    if (!allowMigration) throw ServiceError.forbidden('client nonce mismatch');
    if (!(given > stored)) throw ServiceError.forbidden('client nonce mismatch and instance meta-data incorrect');
  }
  if (given < stored) throw ServiceError.forbidden('instance meta-data is older than the one used for previous login');
}

function vmAliasName(config: IdentityConfig, role: RoleRecord, document: IdentityDocument): string {
  if (config.vm_alias === 'instance_id') return document.instanceId;
  if (config.vm_alias === 'image_id') return document.imageId;
  return role.role_id;
}

export async function vmLogin(method: CloudAuth, f: FieldData): Promise<AuthResponse> {
  const document = f.has('pkcs7')
    ? pkcs7Document(f.get('pkcs7'), await certificates(method, 'pkcs7'))
    : signedDocument(f.get('identity'), f.get('signature'), await certificates(method, 'identity'));
  const nonce = f.has('nonce') ? f.get<string>('nonce') : undefined;
  if (nonce !== undefined && nonce.length > MAX_NONCE_LENGTH) throw ServiceError.badRequest(`field "nonce": longer than ${MAX_NONCE_LENGTH} characters`);
  const roleName = (f.get<string>('role') || document.imageId).toLowerCase();
  const role = await method.role(roleName);
  if (!role) throw ServiceError.badRequest(`entry for role "${roleName}" not found`);
  if (role.auth_type !== 'vm') throw ServiceError.badRequest(`auth method vm not allowed for role "${roleName}"`);
  const instance = await describeInstance(method, document.instanceId, document.accountId, document.region);
  await checkInstanceBindings(method, role, instance);
  const tag = await instanceRoleTag(method, role, roleName, instance);

  const allowMigration = role.allow_instance_migration || Boolean(tag?.allowInstanceMigration);
  // An empty nonce says the instance will never log in again.
  const disallowReauthentication = role.disallow_reauthentication || Boolean(tag?.disallowReauthentication) || nonce === '';
  const existing = await ACCESS_LIST.get(method.storage, document.instanceId);
  if (existing) checkReauthentication(existing, nonce, document, allowMigration);
  const generated = nonce === undefined && !existing && !disallowReauthentication ? randomUUID() : undefined;
  const maxTtl = tag?.maxTtl && (role.token_max_ttl === 0 || tag.maxTtl < role.token_max_ttl) ? tag.maxTtl : role.token_max_ttl;
  const now = new Date();
  await ACCESS_LIST.put(method.storage, document.instanceId, {
    role: roleName,
    client_nonce: generated ?? nonce ?? existing?.client_nonce ?? '',
    creation_time: existing?.creation_time ?? now.toISOString(),
    expiration_time: new Date(now.getTime() + method.entryTtl(maxTtl) * 1000).toISOString(),
    last_updated_time: now.toISOString(),
    pending_time: document.pendingTime,
    disallow_reauthentication: disallowReauthentication,
  });

  const identityConfig = await method.identityConfig();
  const facts = { account_id: document.accountId, auth_type: 'vm', image_id: document.imageId, instance_id: document.instanceId, region: document.region };
  const metadata: Record<string, string> = { ...facts, role: roleName, ...(generated ? { nonce: generated } : {}), ...(tag ? { role_tag_max_ttl: String(tag.maxTtl) } : {}) };
  const data: VmLoginData = { role_name: roleName, role_id: role.role_id, auth_type: 'vm', instance_id: document.instanceId, account_id: document.accountId, region: document.region };
  const settings = { ...role, token_max_ttl: maxTtl, token_policies: tag?.policies.length ? tag.policies : role.token_policies };
  return tokenAuth(settings, {
    displayName: document.instanceId,
    metadata,
    alias: { name: vmAliasName(identityConfig, role, document), metadata: Object.fromEntries(identityConfig.vm_metadata.map((name) => [name, facts[name as keyof typeof facts]])) },
    internalData: data,
  });
}

/** A vm token's renewal: the role still accepts vm logins, the instance still runs and is bound, and its access-list entry is extended. */
export async function renewVmAuth(method: CloudAuth, auth: AuthResponse): Promise<AuthResponse> {
  const data = auth.internalData as VmLoginData;
  const role = await method.role(data.role_name);
  if (!role) throw ServiceError.badRequest(`role "${data.role_name}" no longer exists; the token cannot be renewed`);
  if (role.auth_type !== 'vm') throw ServiceError.badRequest(`role "${data.role_name}" no longer accepts vm logins`);
  const entry = await ACCESS_LIST.get(method.storage, data.instance_id);
  if (!entry) throw ServiceError.forbidden(`instance "${data.instance_id}" is no longer on the access list; the token cannot be renewed`);
  await checkInstanceBindings(method, role, await describeInstance(method, data.instance_id, data.account_id, data.region));
  const expiration = new Date(Date.now() + method.entryTtl(role.token_max_ttl) * 1000).toISOString();
  await ACCESS_LIST.put(method.storage, data.instance_id, { ...entry, expiration_time: expiration, last_updated_time: new Date().toISOString() });
  // A role tag's policies stay what the login had; the role's TTLs apply.
  const renewed = renewedAuth(role, auth);
  return auth.metadata?.role_tag_max_ttl ? { ...renewed, policies: auth.policies } : renewed;
}
