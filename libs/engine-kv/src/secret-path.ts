import type { FieldMap } from '@svc/framework';
import { ServiceError } from '@svc/http';

/** The `path` parameter every key-addressed path declares. */
export const PATH_FIELD: FieldMap = {
  path: { type: 'string', description: 'Location of the secret, relative to the mount (or to its version 2 prefix).' },
};

function invalid(path: string, problem: string): ServiceError {
  return ServiceError.badRequest(`invalid secret path ${JSON.stringify(path)}: ${problem}`);
}

/** Segments that would alias another key ("." and "..") or be empty ("a//b") are refused. */
function checkSegments(path: string, segments: string[]): void {
  if (segments.some((segment) => segment === '')) throw invalid(path, 'empty segments are not allowed');
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    throw invalid(path, "'.' and '..' segments are not allowed");
  }
}

/** A secret's key: non-empty, not a directory, made of real segments. */
export function secretKey(path: string | undefined): string {
  if (path === undefined || path === '') throw ServiceError.badRequest('a secret path is required');
  if (path.endsWith('/')) throw invalid(path, "it names a directory (ends in '/'), not a secret");
  checkSegments(path, path.split('/'));
  return path;
}

/** A directory to list: '' (the root) or a path ending in '/'; a path without the '/' means the same. */
export function secretDirectory(path: string | undefined): string {
  if (path === undefined || path === '') return '';
  const directory = path.endsWith('/') ? path : `${path}/`;
  checkSegments(path, directory.slice(0, -1).split('/'));
  return directory;
}

/** Vault answers a missing secret with a bare 404. */
export function secretNotFound(): ServiceError {
  return new ServiceError('not-found', []);
}
