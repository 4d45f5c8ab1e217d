/**
 * What went wrong, in the service's terms. Code that fails says which kind of failure it is; only
 * the HTTP edge (`status.ts`) decides what status a client sees for it.
 */
export type ErrorKind =
  | 'bad-request'
  | 'permission-denied'
  | 'not-found'
  /** No route declares the path: answered with only the default custom headers. */
  | 'unsupported-path'
  | 'method-not-allowed'
  | 'conflict'
  /** A precondition of the request itself is unmet (a required header). */
  | 'precondition'
  | 'unsupported-media-type'
  | 'internal'
  | 'uninitialized'
  | 'sealed'
  | 'unavailable'
  /** An external system (a database, a cloud provider) refused or failed. */
  | 'provider-error'
  /** A write of replicated data on a performance secondary: only its primary writes it. */
  | 'read-only-replicated';

/** The 404 of a path no route declares; such answers carry only the default custom headers. */
export const UNSUPPORTED_PATH = 'unsupported path';

export const SEALED_MESSAGE = 'Service is sealed';
export const UNINITIALIZED_MESSAGE = 'Service is not initialized';

/**
 * Errors that carry a kind and messages safe to show a client. Anything thrown that is not a
 * ServiceError becomes an internal error with a generic message, so an unexpected exception can
 * never leak a secret into a response body.
 */
export class ServiceError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly errors: string[],
  ) {
    super(errors.join('; '));
    this.name = 'ServiceError';
  }

  static badRequest(message: string): ServiceError {
    return new ServiceError('bad-request', [message]);
  }
  static forbidden(message = 'permission denied'): ServiceError {
    return new ServiceError('permission-denied', [message]);
  }
  static notFound(message = 'no handler for route'): ServiceError {
    return new ServiceError('not-found', [message]);
  }
  static unsupportedPath(): ServiceError {
    return new ServiceError('unsupported-path', [UNSUPPORTED_PATH]);
  }
  static methodNotAllowed(message = 'unsupported operation'): ServiceError {
    return new ServiceError('method-not-allowed', [message]);
  }
  static conflict(message: string): ServiceError {
    return new ServiceError('conflict', [message]);
  }
  static precondition(message: string): ServiceError {
    return new ServiceError('precondition', [message]);
  }
  static unsupportedMediaType(message: string): ServiceError {
    return new ServiceError('unsupported-media-type', [message]);
  }
  /** A failure the service itself cannot recover from for this request; the message must name no secret. */
  static internal(message: string): ServiceError {
    return new ServiceError('internal', [message]);
  }
  static uninitialized(): ServiceError {
    return new ServiceError('uninitialized', [UNINITIALIZED_MESSAGE]);
  }
  static sealed(message = SEALED_MESSAGE): ServiceError {
    return new ServiceError('sealed', [message]);
  }
  static unavailable(message: string): ServiceError {
    return new ServiceError('unavailable', [message]);
  }
  static badGateway(message: string): ServiceError {
    return new ServiceError('provider-error', [message]);
  }
}

/** The message of a write refused on a performance secondary (no key: a key can name a secret). */
export const READ_ONLY_REPLICATED_MESSAGE = 'replicated storage is read-only on a performance secondary: the write belongs to the primary';

/**
 * A write of replicated storage on a performance secondary. Its own kind survives the bus and
 * the engine replies, so the request path can tell it from any other failure and forward the request.
 */
export class ReadOnlyReplicatedStorageError extends ServiceError {
  constructor() {
    super('read-only-replicated', [READ_ONLY_REPLICATED_MESSAGE]);
    this.name = 'ReadOnlyReplicatedStorageError';
  }
}

/** Turns any thrown value into a kind and a list of messages safe to show a client. */
export function errorOf(err: unknown): { kind: ErrorKind; errors: string[] } {
  if (err instanceof ServiceError) return { kind: err.kind, errors: err.errors };
  return { kind: 'internal', errors: ['internal error'] };
}

/**
 * What an unexpected error may contribute to a log line: its class and a stack of code locations,
 * never its message, which could quote a secret the failing code was handling.
 */
export function describeRequestError(err: unknown): { type: string; stack?: string } {
  if (!(err instanceof Error)) return { type: typeof err };
  const frames = err.stack?.split('\n').slice(1).join('\n');
  return { type: err.name, stack: frames };
}
