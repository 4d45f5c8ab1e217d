import type { FieldMap } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';

/** The `path` parameter every key-addressed path declares. */
export const PATH_FIELD: FieldMap = {
  path: { type: 'string', description: 'Location of the secret, relative to the mount (or to its version 2 prefix).' },
};

function invalid(path: string, problem: string): ServiceError {
  return ServiceError.badRequest(`invalid secret path ${JSON.stringify(path)}: ${problem}`);
}

/** An empty segment, or a "." or ".." one, anywhere in a path without its trailing '/'. */
const SUSPECT_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;

/** Segments that would alias another key ("." and "..") or be empty ("a//b") are refused. */
function checkSegments(path: string, joined: string): void {
  // Most paths have none: split only to say which problem it is.
  if (!SUSPECT_SEGMENT.test(joined)) return;
  const segments = joined.split('/');
  if (segments.some((segment) => segment === '')) throw invalid(path, 'empty segments are not allowed');
  throw invalid(path, "'.' and '..' segments are not allowed");
}

/** A secret's key: non-empty, not a directory, made of real segments. */
export function secretKey(path: string | undefined): string {
  if (path === undefined || path === '') throw ServiceError.badRequest('a secret path is required');
  if (path.endsWith('/')) throw invalid(path, "it names a directory (ends in '/'), not a secret");
  checkSegments(path, path);
  return path;
}

/** A directory to list: '' (the root) or a path ending in '/'; a path without the '/' means the same. */
export function secretDirectory(path: string | undefined): string {
  if (path === undefined || path === '') return '';
  const directory = path.endsWith('/') ? path : `${path}/`;
  checkSegments(path, directory.slice(0, -1));
  return directory;
}

/** Vault answers a missing secret with a bare 404. */
export function secretNotFound(): ServiceError {
  return new ServiceError('not-found', []);
}
