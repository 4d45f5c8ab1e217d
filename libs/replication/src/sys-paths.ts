import { envelope } from '@svc/api-contract';
import type { FieldData, FieldMap, OperationDeclaration, PathDeclaration } from '@svc/framework';
import { shareGenerationPaths, type ShareGeneration } from '@svc/seal';
import { DEFAULT_SECONDARY_TOKEN_TTL } from './primary-operations';
import type { Replication } from './replication';
import { REPLICATION_MODES, type ReplicationMode } from './types';

/** What the sys/replication paths need of the core: its replication and the DR operation token's generation. */
export interface ReplicationPathsDeps {
  replication: Pick<
    Replication,
    | 'status'
    | 'enablePrimary'
    | 'demotePrimary'
    | 'disablePrimary'
    | 'secondaryToken'
    | 'revokeSecondary'
    | 'generatePublicKey'
    | 'enableSecondary'
    | 'promote'
    | 'disableSecondary'
    | 'updatePrimary'
    | 'writePathsFilter'
    | 'readPathsFilter'
    | 'deletePathsFilter'
    | 'primaryDynamicFilter'
    | 'secondaryDynamicFilter'
    | 'requireDrSecondary'
    | 'requireOperationToken'
    | 'deleteOperationToken'
    | 'reindex'
    | 'merkleCheck'
  >;
  /** The DR operation token's generation from the primary's key shares. */
  drOperationToken: ShareGeneration;
}

const DR_TOKEN_FIELD: FieldMap = {
  dr_operation_token: { type: 'string', required: true, sensitive: true, description: 'A DR operation token (generate-operation-token): authorizes the call.' },
};
const CA_FIELDS: FieldMap = {
  primary_api_addr: { type: 'string', description: 'The primary\'s API address, instead of the one the activation token carries.' },
  ca_file: { type: 'string', description: 'PEM file of the CA that signed the primary\'s API certificate (default: the system\'s roots).' },
  ca_path: { type: 'string', description: 'Directory of PEM CA files for the primary\'s API certificate.' },
};
const ID_FIELD: FieldMap = { id: { type: 'string', required: true, description: 'The secondary\'s id, given when its activation token was made.' } };

/**
 * sys/replication/<mode>/* (Document 3): status (unauthenticated), enabling, demoting and
 * disabling primaries, activation tokens and revocation, secondaries' enable, promote, disable and
 * update-primary, paths filters (performance), DR operation tokens (DR). Every other call is the
 * root namespace's and needs sudo; in DR mode a secondary's calls are authorized by a DR operation
 * token instead, as a DR secondary has no tokens of its own.
 */
export function replicationPaths(core: ReplicationPathsDeps): PathDeclaration[] {
  return [...REPLICATION_MODES.flatMap((mode) => modePaths(core, mode)), ...performancePaths(core), ...drPaths(core)];
}

/** An operation of the root namespace needing sudo. */
function rootOperation(summary: string, handler: OperationDeclaration['handler']): OperationDeclaration {
  return { summary, sudo: true, rootNamespace: true, handler };
}

/** A DR secondary's operation: no client token (the secondary has none), a DR operation token instead. */
function drOperation(core: ReplicationPathsDeps, summary: string, handler: OperationDeclaration['handler']): OperationDeclaration {
  return {
    summary,
    unauthenticated: true,
    rootNamespace: true,
    handler: async (req, f) => {
      await core.replication.requireDrSecondary();
      await core.replication.requireOperationToken(f.get<string>('dr_operation_token'));
      return handler(req, f);
    },
  };
}

function modePaths(core: ReplicationPathsDeps, mode: ReplicationMode): PathDeclaration[] {
  const base = `replication/${mode}`;
  const replication = core.replication;
  const secondaryOperation = mode === 'dr' ? (summary: string, handler: OperationDeclaration['handler']) => drOperation(core, summary, handler) : rootOperation;
  const drToken = mode === 'dr' ? DR_TOKEN_FIELD : {};
  const enableRequest = (f: FieldData) => ({ token: f.get<string>('token'), primaryApiAddr: f.get<string>('primary_api_addr'), caFile: f.get<string>('ca_file'), caPath: f.get<string>('ca_path') });
  return [
    {
      pattern: `${base}/status`,
      synopsis: `The ${mode} replication status of this cluster.`,
      operations: { read: { summary: 'Read the status.', unauthenticated: true, handler: async () => ({ data: await replication.status(mode) }) } },
    },
    {
      pattern: `${base}/primary/enable`,
      synopsis: `Makes this cluster a ${mode} primary, with a new cluster id.`,
      fields: { primary_cluster_addr: { type: 'string', default: '', description: 'The cluster address given to secondaries instead of this node\'s (a load balancer, say).' } },
      operations: { update: rootOperation('Enable as primary.', async (_req, f) => void (await replication.enablePrimary(mode, f.get('primary_cluster_addr')))) },
    },
    {
      pattern: `${base}/primary/demote`,
      synopsis: 'Makes this primary a secondary that keeps its cluster id and connects to no primary until update-primary.',
      operations: { update: rootOperation('Demote.', async () => void (await replication.demotePrimary(mode))) },
    },
    {
      pattern: `${base}/primary/disable`,
      synopsis: 'Stops replication on this primary; its secondaries can no longer connect.',
      operations: { update: rootOperation('Disable the primary.', async () => void (await replication.disablePrimary(mode))) },
    },
    {
      pattern: `${base}/primary/secondary-token`,
      synopsis: 'Makes the activation token of a secondary.',
      description:
        'Response-wrapped: `wrap_info.token` is the wrapping token in JWT form, carrying this primary\'s API address (`addr`). With `secondary_public_key` the token is instead encrypted to that key and returned as `data.token`.',
      fields: {
        ...ID_FIELD,
        ttl: { type: 'duration', default: DEFAULT_SECONDARY_TOKEN_TTL, description: 'Lifetime of the activation token (default 30m).' },
        secondary_public_key: { type: 'string', default: '', description: 'The secondary\'s key from secondary/generate-public-key: encrypt instead of wrapping.' },
      },
      operations: {
        update: rootOperation('Make an activation token.', async (req, f) => {
          const made = await replication.secondaryToken(mode, f.get('id'), f.get('ttl'), f.get('secondary_public_key'));
          return made.wrapInfo ? { raw: envelope(req.requestId, { wrap_info: made.wrapInfo }) } : { data: { token: made.token } };
        }),
      },
    },
    {
      pattern: `${base}/primary/revoke-secondary`,
      synopsis: 'Revokes a secondary: it is disconnected at once and needs a new activation token.',
      fields: ID_FIELD,
      operations: { update: rootOperation('Revoke a secondary.', async (_req, f) => void (await replication.revokeSecondary(mode, f.get('id')))) },
    },
    {
      pattern: `${base}/secondary/generate-public-key`,
      synopsis: 'Makes the key a primary encrypts this secondary\'s activation token to (secondary_public_key).',
      operations: { update: rootOperation('Make a public key.', async () => ({ data: { secondary_public_key: await replication.generatePublicKey(mode) } })) },
    },
    {
      pattern: `${base}/secondary/enable`,
      synopsis: 'Makes this cluster a secondary of the primary that made the activation token. Its storage is wiped at once.',
      fields: { token: { type: 'string', required: true, sensitive: true, description: 'The activation token.' }, ...CA_FIELDS },
      operations: { update: rootOperation('Enable as secondary.', async (_req, f) => void (await replication.enableSecondary(mode, enableRequest(f)))) },
    },
    {
      pattern: `${base}/secondary/promote`,
      synopsis: 'Makes this secondary a primary; other secondaries need new tokens.',
      fields: {
        primary_cluster_addr: { type: 'string', default: '', description: 'The cluster address given to secondaries.' },
        force: { type: 'bool', default: false, description: 'Promote even while the primary still answers (two primaries may lose data).' },
        ...drToken,
      },
      operations: {
        update: secondaryOperation('Promote.', async (req, f) => {
          await replication.promote(mode, f.get('primary_cluster_addr'), f.get('force'));
          if (mode !== 'dr') return undefined;
          // Vault's DR promote answer: the share progress of its legacy form, complete with a token.
          const progress = { progress: 0, required: 0, complete: true };
          return { raw: { ...envelope(req.requestId, { data: progress }), ...progress } };
        }),
      },
    },
    {
      pattern: `${base}/secondary/disable`,
      synopsis: 'Stops replication on this secondary; it no longer connects to its primary.',
      fields: drToken,
      operations: { update: secondaryOperation('Disable the secondary.', async () => void (await replication.disableSecondary(mode))) },
    },
    {
      pattern: `${base}/secondary/update-primary`,
      synopsis: 'Points this secondary at a new primary without wiping its data.',
      description:
        '`token` (a new activation token; blank: forget the primary) and `update_primary_addrs` (cluster addresses tried in turn with the current certificate; performance only) are mutually exclusive.',
      fields: {
        token: { type: 'string', sensitive: true, description: 'A new activation token; a blank one clears the primary.' },
        ...CA_FIELDS,
        update_primary_addrs: { type: 'comma-string-list', default: [], description: 'Cluster addresses to try, in order (performance only).' },
        ...drToken,
      },
      operations: {
        update: secondaryOperation('Update the primary.', async (_req, f) => {
          await replication.updatePrimary(mode, { ...enableRequest(f), tokenGiven: f.has('token'), updatePrimaryAddrs: f.get<string[]>('update_primary_addrs') });
          return undefined;
        }),
      },
    },
  ];
}

function performancePaths(core: ReplicationPathsDeps): PathDeclaration[] {
  const replication = core.replication;
  const dynamicFilter = (side: 'primary' | 'secondary'): PathDeclaration => ({
    pattern: `replication/performance/${side}/dynamic-filter/:id`,
    synopsis: `The mounts and namespaces the paths filter of a secondary keeps from it, as the ${side} reads them.`,
    operations: {
      read: rootOperation('Read the dynamic filter.', async (_req, f) => ({
        data: side === 'primary' ? await replication.primaryDynamicFilter(f.params.id) : await replication.secondaryDynamicFilter(f.params.id),
      })),
    },
  });
  return [
    {
      pattern: 'replication/performance/primary/paths-filter/:id',
      synopsis: 'The paths filter of a secondary: the mounts and namespaces it receives (allow) or does not (deny).',
      fields: {
        mode: { type: 'string', default: 'allow', allowed: ['allow', 'deny'], description: '`allow`: only the listed paths replicate; `deny`: all but them.' },
        paths: { type: 'list', default: [], description: 'Mount paths (`secret/`, `auth/userpass/`) and namespace paths (`team-a/`).' },
      },
      operations: {
        update: rootOperation('Write the filter.', async (_req, f) => void (await replication.writePathsFilter(f.params.id, f.get('mode'), f.get('paths')))),
        read: rootOperation('Read the filter.', async (_req, f) => {
          const filter = await replication.readPathsFilter(f.params.id);
          return filter ? { data: { mode: filter.mode, paths: filter.paths } } : undefined;
        }),
        delete: rootOperation('Remove the filter.', async (_req, f) => void (await replication.deletePathsFilter(f.params.id))),
      },
    },
    dynamicFilter('primary'),
    dynamicFilter('secondary'),
  ];
}

function drPaths(core: ReplicationPathsDeps): PathDeclaration[] {
  return [
    ...shareGenerationPaths('replication/dr/secondary/generate-operation-token', core.drOperationToken, {
      token: 'DR operation token',
      decode: 'as a root token\'s: `svc operator generate-root -decode`',
      guard: () => core.replication.requireDrSecondary(),
      rootNamespace: true,
    }),
    {
      pattern: 'replication/dr/secondary/reindex',
      synopsis: 'Rebuilds the Merkle index of this DR secondary from its storage (slow on a large store).',
      fields: {
        diff: { type: 'bool', default: false, description: 'Also count the keys that differed (slower: key by key).' },
        force: { type: 'bool', default: false, description: 'Rebuild from storage alone and write every page.' },
        skip_flush: { type: 'bool', default: false, description: 'Keep the rebuilt index in memory until the next flush.' },
        ...DR_TOKEN_FIELD,
      },
      operations: {
        update: drOperation(core, 'Reindex.', async (_req, f) => {
          const warnings = await core.replication.reindex({ diff: f.get('diff'), force: f.get('force'), skipFlush: f.get('skip_flush') });
          return { warnings };
        }),
      },
    },
    {
      pattern: 'replication/dr/secondary/merkle-check',
      synopsis: "Compares this DR secondary's stored Merkle index with its storage and reports what is corrupted.",
      fields: DR_TOKEN_FIELD,
      operations: {
        update: drOperation(core, 'Check the Merkle index.', async () => {
          return { data: { merkle_corruption_report: await core.replication.merkleCheck() } };
        }),
      },
    },
    {
      pattern: 'replication/dr/secondary/operation-token/delete',
      synopsis: 'Deletes a DR operation token (they have no TTL).',
      fields: DR_TOKEN_FIELD,
      operations: { update: drOperation(core, 'Delete the token.', async (_req, f) => void (await core.replication.deleteOperationToken(f.get('dr_operation_token')))) },
    },
  ];
}
