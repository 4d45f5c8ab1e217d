import { ServiceError } from '@svc/api-contract';

/** A mount path as mount tables hold it: no leading slash, one trailing slash; refused when empty or with `.`/`..` segments. */
export function normalizeMountPath(path: string): string {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') throw ServiceError.badRequest('mount path must not be empty');
  if (trimmed.split('/').some((s) => s === '' || s === '.' || s === '..' || s.endsWith('.'))) {
    throw ServiceError.badRequest(`invalid mount path "${path}"`);
  }
  return `${trimmed}/`;
}
