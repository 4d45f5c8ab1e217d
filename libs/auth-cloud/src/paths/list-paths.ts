/** role/:role/tag, the identity access list, the role tag deny list and their tidy (manual and periodic). */
import { listResponse, type FieldData, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { RecordStore, StorageView } from '@svc/storage';
import type { CloudAuth } from '../method';
import { ACCESS_LIST, DEFAULT_SAFETY_BUFFER, DENY_LIST, TIDY_CONFIG } from '../records';
import { createRoleTag, taggedRole, verifyRoleTag } from '../role-tags';

const encodeTag = (tag: string) => Buffer.from(tag).toString('base64url');
const decodeTag = (key: string) => Buffer.from(key, 'base64url').toString('utf8');

/**
 * Removes the entries whose expiration passed more than `safetyBuffer` seconds ago. One that looks
 * expired is read again from storage itself before it goes: a login through another replica may
 * have renewed it since this process's read cache took its copy.
 */
async function tidy(storage: StorageView, store: RecordStore<{ expiration_time: string }>, safetyBuffer: number, now = Date.now()): Promise<number> {
  const expired = (entry: { expiration_time: string } | null) => entry !== null && Date.parse(entry.expiration_time) + safetyBuffer * 1000 < now;
  let removed = 0;
  for (const key of await store.list(storage)) {
    if (expired(await store.get(storage, key)) && expired(await store.getStored(storage, key))) {
      await store.delete(storage, key);
      removed++;
    }
  }
  return removed;
}

const LISTS = {
  'identity-accesslist': ACCESS_LIST,
  'roletag-denylist': DENY_LIST,
} as const;

/** The periodic tidy of both lists, each unless its tidy configuration disables it. */
export async function periodicTidy(method: CloudAuth): Promise<void> {
  for (const [name, store] of Object.entries(LISTS)) {
    const config = await TIDY_CONFIG.get(method.storage, name);
    if (config?.disable_periodic_tidy) continue;
    await tidy(method.storage, store, config?.safety_buffer ?? DEFAULT_SAFETY_BUFFER);
  }
}

export function listPaths(method: CloudAuth): PathDeclaration[] {
  const { storage } = method;

  const tidyPath = (name: keyof typeof LISTS, legacy: string): PathDeclaration => ({
    pattern: `tidy/${name}`,
    aliases: [`tidy/${legacy}`],
    synopsis: `Removes expired entries of the ${name === 'identity-accesslist' ? 'identity access list' : 'role tag deny list'}.`,
    fields: { safety_buffer: { type: 'duration', default: DEFAULT_SAFETY_BUFFER, description: 'Time kept beyond an entry\'s expiration (default 72h).' } },
    operations: {
      update: {
        summary: 'Tidy the list now.',
        handler: async (_req, f) => ({ data: { entries_removed: await tidy(storage, LISTS[name], f.get('safety_buffer')) } }),
      },
    },
  });

  async function tagOf(f: FieldData) {
    const value = f.params.role_tag;
    const role = await method.requireRole(taggedRole(value));
    return { value, role, tag: verifyRoleTag(role, value) };
  }

  return [
    {
      pattern: 'role/:role/tag',
      synopsis: 'Creates a role tag: an instance carrying it in the role\'s tag key logs in with narrower settings.',
      fields: {
        role: { type: 'string', description: 'Name of the role.' },
        policies: { type: 'comma-string-list', default: [], description: 'Policies of the tag (within the role\'s); default the role\'s.' },
        max_ttl: { type: 'duration', default: 0, description: 'Maximum TTL of tokens of logins with the tag (within the role\'s).' },
        instance_id: { type: 'string', default: '', description: 'Only this instance may use the tag.' },
        allow_instance_migration: { type: 'bool', default: false, description: 'Logins with the tag allow instance migration.' },
        disallow_reauthentication: { type: 'bool', default: false, description: 'Logins with the tag cannot re-authenticate.' },
      },
      operations: {
        update: {
          summary: 'Create a role tag.',
          handler: async (_req, f) => {
            const name = f.params.role.toLowerCase();
            const role = await method.requireRole(name);
            if (role.auth_type !== 'vm' || !role.role_tag) throw ServiceError.badRequest(`role "${name}" has no role_tag key: tags are only for vm roles that set one`);
            const policies = f.get<string[]>('policies').map((policy) => policy.trim().toLowerCase());
            const outside = policies.filter((policy) => role.token_policies.length > 0 && !role.token_policies.includes(policy));
            if (outside.length) throw ServiceError.badRequest(`field "policies": ${outside.join(', ')} not among the role's policies`);
            const maxTtl = f.get<number>('max_ttl');
            if (role.token_max_ttl > 0 && maxTtl > role.token_max_ttl) throw ServiceError.badRequest('field "max_ttl": greater than the role\'s token_max_ttl');
            if (f.get('allow_instance_migration') && f.get('disallow_reauthentication')) throw ServiceError.badRequest('fields "allow_instance_migration" and "disallow_reauthentication" cannot both be true');
            const value = createRoleTag(role, {
              role: name,
              policies,
              maxTtl,
              instanceId: f.get('instance_id'),
              allowInstanceMigration: f.get('allow_instance_migration'),
              disallowReauthentication: f.get('disallow_reauthentication'),
            });
            return { data: { tag_key: role.role_tag, tag_value: value } };
          },
        },
      },
    },
    {
      pattern: 'identity-accesslist/:instance_id',
      aliases: ['identity-whitelist/:instance_id'],
      synopsis: 'Reads or removes the access-list entry of an instance (removing it lets the instance log in afresh).',
      fields: { instance_id: { type: 'string', description: 'The instance id.' } },
      operations: {
        read: {
          summary: 'Read an entry.',
          handler: async (_req, f) => {
            const entry = await ACCESS_LIST.get(storage, f.params.instance_id);
            if (!entry) return undefined;
            const { client_nonce: _nonce, ...shown } = entry;
            return { data: shown };
          },
        },
        delete: {
          summary: 'Remove an entry.',
          handler: async (_req, f) => {
            await ACCESS_LIST.delete(storage, f.params.instance_id);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'identity-accesslist/',
      aliases: ['identity-whitelist/'],
      synopsis: 'Lists the instances of the access list.',
      operations: { list: { summary: 'List the instances.', handler: async () => listResponse(await ACCESS_LIST.list(storage)) } },
    },
    {
      pattern: 'roletag-denylist/*role_tag',
      aliases: ['roletag-blacklist/*role_tag'],
      synopsis: 'Places a role tag on the deny list, reads or removes its entry.',
      fields: { role_tag: { type: 'string', description: 'The role tag.' } },
      operations: {
        update: {
          summary: 'Deny a role tag.',
          handler: async (_req, f) => {
            const { value, role, tag } = await tagOf(f);
            const now = new Date();
            const ttl = method.entryTtl(tag.maxTtl, role.token_max_ttl);
            await DENY_LIST.put(storage, encodeTag(value), { creation_time: now.toISOString(), expiration_time: new Date(now.getTime() + ttl * 1000).toISOString() });
            return undefined;
          },
        },
        read: {
          summary: 'Read an entry.',
          handler: async (_req, f) => {
            const entry = await DENY_LIST.get(storage, encodeTag(f.params.role_tag));
            return entry ? { data: { ...entry } } : undefined;
          },
        },
        delete: {
          summary: 'Remove an entry.',
          handler: async (_req, f) => {
            await DENY_LIST.delete(storage, encodeTag(f.params.role_tag));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'roletag-denylist/',
      aliases: ['roletag-blacklist/'],
      synopsis: 'Lists the denied role tags.',
      operations: { list: { summary: 'List the denied tags.', handler: async () => listResponse((await DENY_LIST.list(storage)).map(decodeTag)) } },
    },
    tidyPath('identity-accesslist', 'identity-whitelist'),
    tidyPath('roletag-denylist', 'roletag-blacklist'),
  ];
}

/** Whether a role tag is on the deny list. */
export async function denied(method: CloudAuth, value: string): Promise<boolean> {
  return (await DENY_LIST.get(method.storage, encodeTag(value))) !== null;
}
