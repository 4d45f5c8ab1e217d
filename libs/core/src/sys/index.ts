import { Backend } from '@svc/framework';
import type { Core } from '../core';
import { mountPaths } from './mount-paths';
import { openApiPaths } from './openapi-paths';
import { sealPaths } from './seal-paths';

const SYSTEM_HELP = `The system backend: initialization and seal management, mounts of secrets engines and
auth methods, and the API description of this server.`;

export function createSystemBackend(core: Core): Backend {
  return new Backend({
    type: 'system',
    help: SYSTEM_HELP,
    paths: [...sealPaths(core), ...mountPaths(core), ...openApiPaths(core)],
  });
}
