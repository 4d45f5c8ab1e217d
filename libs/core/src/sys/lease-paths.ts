import { listResponse, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/http';
import type { Core } from '../core';
import { ExpirationManager } from '../leases/expiration';
import { leaseTtl } from '../leases/lease';
import { nowSeconds } from '../tokens/token-store';

const LEASE_ID: FieldMap = { lease_id: { type: 'string', required: true, description: 'The lease id.' } };

/** sys/leases: lookup, renew, revoke (one, by prefix, forced), tidy. */
export function leasePaths(core: Core): PathDeclaration[] {
  const nsId = (req: Request) => core.namespaceOf(req).record.id;
  const existing = async (req: Request, leaseId: string) => {
    const lease = await core.leases.get(nsId(req), leaseId);
    if (!lease) throw ServiceError.badRequest('invalid lease');
    return lease;
  };
  /** revoke-force removes the leases without asking the engine (the operator's last resort). */
  const forceRemoveUnder = async (req: Request, prefix: string) => {
    const id = nsId(req);
    for (const leaseId of await core.leases.idsUnder(id, prefix)) {
      const key = ExpirationManager.key(id, leaseId);
      const entry = await core.leases.readKey(key);
      if (entry) await core.leases.delete(key, entry);
    }
    return undefined;
  };

  return [
    {
      pattern: 'leases/lookup',
      synopsis: 'Looks up a lease.',
      fields: LEASE_ID,
      operations: {
        update: {
          summary: 'Look up a lease.',
          handler: async (req, f) => {
            const lease = await existing(req, f.get('lease_id'));
            const now = nowSeconds();
            return {
              data: {
                id: lease.leaseId,
                issue_time: new Date(lease.issueTime * 1000).toISOString(),
                expire_time: new Date(lease.expireTime * 1000).toISOString(),
                last_renewal: lease.lastRenewalTime === lease.issueTime ? null : new Date(lease.lastRenewalTime * 1000).toISOString(),
                renewable: lease.renewable,
                ttl: leaseTtl(lease, now),
                revoke_attempts: lease.revokeAttempts,
                last_revoke_error: lease.lastRevokeError ?? null,
              },
            };
          },
        },
      },
    },
    {
      pattern: 'leases/lookup/*prefix',
      synopsis: 'Lists lease ids under a prefix.',
      operations: {
        list: { summary: 'List leases under a prefix.', sudo: true, handler: async (req, f) => listResponse(await core.leases.list(nsId(req), f.params.prefix)) },
      },
    },
    {
      pattern: 'leases/renew',
      synopsis: 'Renews a lease.',
      fields: { ...LEASE_ID, increment: { type: 'duration', default: 0, description: 'Requested TTL from now.' } },
      operations: {
        update: {
          summary: 'Renew a lease.',
          handler: async (req, f) => {
            const renewed = await core.leaseLifecycle.renew(core.namespaceOf(req), f.get('lease_id'), f.get('increment'));
            return { data: null, secret: undefined, raw: { request_id: req.requestId, lease_id: renewed.leaseId, renewable: renewed.renewable, lease_duration: leaseTtl(renewed, nowSeconds()), data: null, wrap_info: null, warnings: null, auth: null } };
          },
        },
      },
    },
    {
      pattern: 'leases/revoke',
      synopsis: 'Revokes a lease now.',
      fields: { ...LEASE_ID, sync: { type: 'bool', default: true, description: 'Wait for the revocation (always done synchronously here).' } },
      operations: {
        update: {
          summary: 'Revoke a lease.',
          handler: async (req, f) => {
            await existing(req, f.get('lease_id'));
            await core.leases.revokeKey(ExpirationManager.key(nsId(req), f.get('lease_id')));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'leases/revoke-prefix/*prefix',
      synopsis: 'Revokes every lease under a prefix.',
      operations: { update: { summary: 'Revoke leases by prefix.', sudo: true, handler: async (req, f) => void (await core.leaseLifecycle.revokeUnder(core.namespaceOf(req), f.params.prefix)) } },
    },
    {
      pattern: 'leases/revoke-force/*prefix',
      synopsis: 'Removes every lease under a prefix without asking the engine to revoke (data loss risk).',
      operations: { update: { summary: 'Force-remove leases by prefix.', sudo: true, handler: (req, f) => forceRemoveUnder(req, f.params.prefix) } },
    },
    {
      pattern: 'leases/tidy',
      synopsis: 'Removes lease index entries that point at nothing.',
      operations: { update: { summary: 'Tidy leases.', handler: async () => ({ data: { removed: await core.leases.tidy() }, warnings: ['Tidy operation successfully completed'] }) } },
    },
  ];
}
