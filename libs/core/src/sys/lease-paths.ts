import { listResponse, type FieldData, type FieldMap, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { ExpirationManager } from '../leases/expiration';
import { leaseTtl } from '../leases/lease';
import type { LeaseLifecycle } from '../leases/lease-lifecycle';
import type { Router } from '../routing/router';
import { nowSeconds } from '../tokens/token-store';

/** What the lease paths use of the core: lease storage, the engines' renew and revoke, the request's namespace. */
export interface LeasePathsDeps {
  leases: Pick<ExpirationManager, 'get' | 'list' | 'revokeKey' | 'tidy'>;
  leaseLifecycle: Pick<LeaseLifecycle, 'renew' | 'revokeUnder' | 'forceRevokeUnder'>;
  router: Pick<Router, 'namespaceOf'>;
}

const LEASE_ID: FieldMap = { lease_id: { type: 'string', required: true, description: 'The lease id.' } };
/** Renew and revoke also take the lease id in the URL, as Vault does. */
const BODY_OR_URL_LEASE_ID: FieldMap = { lease_id: { type: 'string', description: 'The lease id (or in the URL).' } };

/** sys/leases: lookup, renew, revoke (one, by prefix, forced), tidy; also at Vault's legacy sys/renew, sys/revoke, ... */
export function leasePaths(core: LeasePathsDeps): PathDeclaration[] {
  const nsId = (req: Request) => core.router.namespaceOf(req).record.id;
  const existing = async (req: Request, leaseId: string) => {
    const lease = await core.leases.get(nsId(req), leaseId);
    if (!lease) throw ServiceError.badRequest('invalid lease');
    return lease;
  };
  const leaseIdOf = (f: FieldData): string => {
    const leaseId = f.get<string | undefined>('lease_id') || f.params.url_lease_id;
    if (!leaseId) throw ServiceError.badRequest('lease_id must be specified');
    return leaseId;
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
      pattern: 'leases/renew/*url_lease_id?',
      aliases: ['renew/*url_lease_id?'],
      synopsis: 'Renews a lease.',
      fields: { ...BODY_OR_URL_LEASE_ID, increment: { type: 'duration', default: 0, description: 'Requested TTL from now.' } },
      operations: {
        update: {
          summary: 'Renew a lease.',
          handler: async (req, f) => {
            const renewed = await core.leaseLifecycle.renew(core.router.namespaceOf(req), leaseIdOf(f), f.get('increment'));
            // The duration granted at renewal, not what is left a clock tick later.
            return { data: null, secret: undefined, raw: { request_id: req.requestId, lease_id: renewed.leaseId, renewable: renewed.renewable, lease_duration: leaseTtl(renewed, renewed.lastRenewalTime), data: null, wrap_info: null, warnings: null, auth: null } };
          },
        },
      },
    },
    {
      pattern: 'leases/revoke/*url_lease_id?',
      aliases: ['revoke/*url_lease_id?'],
      synopsis: 'Revokes a lease now.',
      fields: { ...BODY_OR_URL_LEASE_ID, sync: { type: 'bool', default: true, description: 'Wait for the revocation (always done synchronously here).' } },
      operations: {
        update: {
          summary: 'Revoke a lease.',
          handler: async (req, f) => {
            const leaseId = leaseIdOf(f);
            await existing(req, leaseId);
            await core.leases.revokeKey(ExpirationManager.key(nsId(req), leaseId));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'leases/revoke-prefix/*prefix',
      aliases: ['revoke-prefix/*prefix'],
      synopsis: 'Revokes every lease under a prefix (whole path segments).',
      operations: { update: { summary: 'Revoke leases by prefix.', sudo: true, handler: async (req, f) => void (await core.leaseLifecycle.revokeUnder(core.router.namespaceOf(req), f.params.prefix)) } },
    },
    {
      pattern: 'leases/revoke-force/*prefix',
      aliases: ['revoke-force/*prefix'],
      synopsis: 'Revokes every lease under a prefix, removing the leases whose engine refuses (the refusals are logged).',
      operations: {
        update: { summary: 'Revoke leases by prefix, ignoring engine failures.', sudo: true, handler: async (req, f) => void (await core.leaseLifecycle.forceRevokeUnder(core.router.namespaceOf(req), f.params.prefix)) },
      },
    },
    {
      pattern: 'leases/tidy',
      synopsis: 'Removes lease index entries that point at nothing.',
      operations: { update: { summary: 'Tidy leases.', handler: async () => ({ data: { removed: await core.leases.tidy() }, warnings: ['Tidy operation successfully completed'] }) } },
    },
  ];
}
