export {
  kvBackendFactory,
  KvBackend,
  kvDeclaration,
  mountKvVersion,
  type KvBackendOptions,
  type KvVersion,
} from './kv-backend';
export type { Clock } from './clock';
export { mergePatch } from './json';
