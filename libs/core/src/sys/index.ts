import { Backend, type PathDeclaration } from '@svc/framework';
import type { Core } from '../core-parts';
import { mountPaths } from './mount-paths';
import { openApiPaths } from './openapi-paths';
import { sealPaths } from './seal-paths';
import { rekeyPaths } from './rekey-paths';
import { generateRootPaths } from './generate-root-paths';
import { policyPaths } from './policy-paths';
import { namespacePaths } from './namespace-paths';
import { leasePaths } from './lease-paths';
import { wrappingPaths } from './wrapping-paths';
import { passwordPolicyPaths } from './password-policy-paths';
import { auditPaths } from './audit-paths';
import { hostInfoPaths } from './host-info-paths';
import { counterPaths } from './counter-paths';
import { internalUiPaths } from './internal-ui-paths';
import { syncPaths } from '@svc/sync-model';
import { syncPort } from './sync-port';
import { snapshotPaths } from '@svc/snapshot';
import { pluginPaths } from './plugin-paths';
import { metricsPaths } from './metrics-paths';
import { replicationPaths } from '@svc/replication';

const SYSTEM_HELP = `The system backend: initialization and seal management, rekey and root token
generation, mounts of secrets engines and auth methods, policies, namespaces, leases, response
wrapping, tools (random bytes, hashes), host information, token counts, metrics, the plugin catalogs, storage snapshots, performance and DR replication, secret sync destinations and associations, the API description of this server and what the web UI asks.`;

/** The sys/ backend over the core's parts; `extraPaths`: what the server adds (the transit engine's tools). */
export function createSystemBackend(core: Core, extraPaths: readonly PathDeclaration[] = []): Backend {
  const backend: Backend = new Backend({
    type: 'system',
    help: SYSTEM_HELP,
    paths: [
      ...sealPaths(core),
      ...rekeyPaths(core),
      ...generateRootPaths(core),
      ...mountPaths(core),
      ...policyPaths(core),
      ...passwordPolicyPaths(core),
      ...namespacePaths(core),
      ...leasePaths(core),
      ...wrappingPaths(core),
      ...auditPaths(core),
      ...hostInfoPaths(),
      ...counterPaths(core),
      ...syncPaths(syncPort(core)),
      ...snapshotPaths(core),
      ...pluginPaths(core),
      ...metricsPaths(core),
      ...replicationPaths(core),
      ...openApiPaths(core, () => backend),
      ...internalUiPaths(core),
      ...extraPaths,
    ],
  });
  return backend;
}
