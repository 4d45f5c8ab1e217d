export { transitBackendFactory } from './backend';
export { MAX_BATCH_ITEMS } from './batch';
export { toolPaths } from './paths/generate';
