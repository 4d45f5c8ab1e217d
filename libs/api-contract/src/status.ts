import { errorOf, type ErrorKind } from './errors';

/** The one mapping of an error's kind to the HTTP status a client sees. */
const HTTP_STATUS: Readonly<Record<ErrorKind, number>> = {
  'bad-request': 400,
  'permission-denied': 403,
  'not-found': 404,
  'unsupported-path': 404,
  'method-not-allowed': 405,
  conflict: 409,
  precondition: 412,
  'unsupported-media-type': 415,
  internal: 500,
  uninitialized: 501,
  'provider-error': 502,
  // Vault's ErrReadOnly; seen only when a write could not be forwarded to the primary.
  'read-only-replicated': 405,
  sealed: 503,
  unavailable: 503,
};

export function httpStatus(kind: ErrorKind): number {
  return HTTP_STATUS[kind];
}

/** Whether the caller can fix the request (a 4xx), as opposed to a failure of the service or beyond it. */
export function isCallerError(kind: ErrorKind): boolean {
  return HTTP_STATUS[kind] < 500;
}

/** Any thrown value as the status and messages a client sees. */
export function toErrorBody(err: unknown): { status: number; errors: string[] } {
  const { kind, errors } = errorOf(err);
  return { status: HTTP_STATUS[kind], errors };
}
