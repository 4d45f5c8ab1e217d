import { ServiceError } from '@svc/api-contract';

/**
 * Key rules. Physical keys only need to name a leaf (non-empty, no trailing '/'); keys handed to
 * a view come from request paths, so they are also checked for segments that could escape the
 * view's prefix or alias another key.
 */

function invalid(what: string, path: string, problem: string): ServiceError {
  return ServiceError.badRequest(`invalid ${what} ${JSON.stringify(path)}: ${problem}`);
}

export function checkKey(key: string): string {
  if (key === '') throw invalid('storage key', key, 'it is empty');
  if (key.endsWith('/')) throw invalid('storage key', key, "it must not end in '/'");
  return key;
}

export function checkListPrefix(prefix: string): string {
  if (prefix !== '' && !prefix.endsWith('/')) throw invalid('list prefix', prefix, "it must be empty or end in '/'");
  return prefix;
}

const PARENT_SEGMENT = /(?:^|\/)\.\.(?:\/|$)/;

function relativePathProblem(path: string): string | undefined {
  if (path.startsWith('/')) return "it must not start with '/'";
  // Every storage key a request reaches passes here: the pattern runs only on a key with '..' in it.
  if (path.includes('..') && PARENT_SEGMENT.test(path)) return "'..' segments are not allowed";
  if (path.includes('//')) return 'empty segments are not allowed';
  return undefined;
}

/** A key relative to a view: `a/b`, never `/a`, `a//b`, `a/../b` or `a/`. */
export function checkRelativeKey(key: string): string {
  checkKey(key);
  const problem = relativePathProblem(key);
  if (problem) throw invalid('storage key', key, problem);
  return key;
}

/** A directory relative to a view: '' or `a/b/`. */
export function checkRelativeDirectory(dir: string): string {
  checkListPrefix(dir);
  const problem = relativePathProblem(dir);
  if (problem) throw invalid('storage prefix', dir, problem);
  return dir;
}
