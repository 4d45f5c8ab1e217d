import type { EngineRegistry } from '@svc/engine-host';
import { mergeOpenApi, openApiDocument, type Backend, type OpenApiDocument, type PathDeclaration } from '@svc/framework';
import { VERSION } from '@svc/api-contract';
import type { Router } from '../routing/router';

/** What sys/internal/specs/openapi uses of the core's parts. */
export interface OpenApiPathsDeps {
  /** The mounts of the request's namespace, and their help, asked of each mount's engine. */
  router: Pick<Router, 'namespaceOf' | 'dispatch' | 'baseMessage'>;
  /** Which mounts have an engine of this build to ask. */
  engines: Pick<EngineRegistry, 'forMount'>;
}

/**
 * sys/internal/specs/openapi: the whole API of this server, built from every mount's declarations
 * and those of `system`, the sys/ backend these paths belong to.
 */
export function openApiPaths(core: OpenApiPathsDeps, system: () => Backend): PathDeclaration[] {
  return [
    {
      pattern: 'internal/specs/openapi',
      synopsis: 'The OpenAPI 3 document of every mounted path.',
      operations: {
        read: {
          summary: 'Generate the OpenAPI document.',
          handler: async (req) => {
            const document = openApiDocument({ title: 'Secrets Service API', version: VERSION, description: 'HTTP API of Secrets Service' });
            const operationIds = new Set<string>();
            mergeOpenApi(document, system().help('').openapi, '/sys', operationIds);
            for (const { mount, prefix } of core.router.namespaceOf(req).allMounts()) {
              if (mount.type === 'system' || !core.engines.forMount(mount)) continue;
              // Each mount documents its own paths (in process or from its service over the bus).
              const reply = await core.router.dispatch({ ...core.router.baseMessage(req), kind: 'help', mount, path: '', operation: 'help' });
              if (reply.ok && reply.help) mergeOpenApi(document, reply.help.openapi as OpenApiDocument, `/${prefix}${mount.path}`, operationIds);
            }
            return { raw: document };
          },
        },
      },
    },
  ];
}
