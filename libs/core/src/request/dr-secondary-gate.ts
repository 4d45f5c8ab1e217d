import { ServiceError } from '@svc/api-contract';

/**
 * What a DR secondary answers (root namespace only): the seal and health endpoints, the status of
 * both replication modes, and its own `sys/replication/dr/secondary/*` operations, which DR
 * operation tokens (or key shares) authorize since it has no tokens of its own.
 */
const SERVED_PATHS = new Set(['sys/health', 'sys/seal-status', 'sys/unseal', 'sys/leader', 'sys/replication/performance/status', 'sys/replication/dr/status']);
const SERVED_PREFIX = 'sys/replication/dr/secondary/';

/** Whether a DR secondary serves a request for this full path (namespace included). */
export function servedOnDrSecondary(fullPath: string): boolean {
  return SERVED_PATHS.has(fullPath) || fullPath.startsWith(SERVED_PREFIX);
}

/** The refusal of every other request, until the secondary is promoted. */
export function drSecondaryRefusal(): ServiceError {
  return ServiceError.badRequest('this cluster is a DR secondary (DR replication secondary mode): it serves no client requests until it is promoted with sys/replication/dr/secondary/promote');
}
