export {
  kvBackendFactory,
  kvDeclaration,
  mountKvVersion,
  type KvVersion,
} from './kv-backend';
export type { Clock } from './clock';
export { mergePatch } from './json';
