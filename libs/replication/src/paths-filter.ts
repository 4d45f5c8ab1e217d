import { ServiceError } from '@svc/api-contract';
import type { FilterMode, MountRef, NamespaceRef, PathsFilter } from './types';

const PATH_SEGMENT = /^[A-Za-z0-9_.-]+$/;

/** Checks and normalizes a paths filter: every path a mount or namespace path, ending in '/'. */
export function checkPathsFilter(mode: string, paths: unknown[]): PathsFilter {
  if (mode !== 'allow' && mode !== 'deny') throw ServiceError.badRequest(`mode must be "allow" or "deny", not "${mode}"`);
  const normalized = paths.map((path, index) => {
    if (typeof path !== 'string') throw ServiceError.badRequest(`paths[${index}] must be a string`);
    const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
    const segments = trimmed.split('/');
    if (trimmed === '' || segments.some((segment) => !PATH_SEGMENT.test(segment) || segment === '.' || segment === '..')) {
      throw ServiceError.badRequest(`paths[${index}] "${path}" is not a mount or namespace path (segments of letters, digits, "_", "-", ".")`);
    }
    if (segments[0] === 'sys') throw ServiceError.badRequest(`paths[${index}]: "sys/" cannot be filtered`);
    return `${trimmed}/`;
  });
  return { mode: mode as FilterMode, paths: [...new Set(normalized)] };
}

/**
 * The mounts and namespaces a filter keeps from a secondary, given what exists now: deny removes
 * the listed ones (a namespace with everything in it), allow removes everything not listed (a
 * namespace is kept when it, an ancestor, or something inside it is listed).
 */
export function dynamicFilter(filter: PathsFilter | null, mounts: readonly Pick<MountRef, 'namespace' | 'path'>[], namespaces: readonly string[]): { dynamic_filtered_mounts: string[]; dynamic_filtered_namespaces: string[] } {
  if (!filter) return { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] };
  const listed = (full: string) => filter.paths.some((path) => full === path || full.startsWith(path));
  const mountFiltered = (mount: Pick<MountRef, 'namespace' | 'path'>) => (filter.mode === 'deny' ? listed(mount.namespace + mount.path) : !listed(mount.namespace + mount.path));
  const namespaceFiltered = (ns: string) =>
    filter.mode === 'deny' ? listed(ns) : !listed(ns) && !filter.paths.some((path) => path.startsWith(ns));
  return {
    dynamic_filtered_mounts: mounts.filter(mountFiltered).map((mount) => mount.namespace + mount.path).sort(),
    dynamic_filtered_namespaces: namespaces.filter((ns) => ns !== '' && namespaceFiltered(ns)).sort(),
  };
}

/** The storage prefixes whose keys a filter keeps from a secondary: its filtered mounts' data, its filtered namespaces' tables. */
export function filteredPrefixes(filter: PathsFilter | null, mounts: readonly MountRef[], namespaces: readonly NamespaceRef[]): string[] {
  const filtered = dynamicFilter(filter, mounts, namespaces.map((namespace) => namespace.path));
  const mountPaths = new Set(filtered.dynamic_filtered_mounts);
  const namespacePaths = new Set(filtered.dynamic_filtered_namespaces);
  return [
    ...mounts.filter((mount) => mountPaths.has(mount.namespace + mount.path)).map((mount) => mount.storagePrefix),
    ...namespaces.filter((namespace) => namespacePaths.has(namespace.path)).map((namespace) => namespace.storagePrefix),
  ];
}
