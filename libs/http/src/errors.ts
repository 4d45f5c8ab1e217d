/**
 * Errors that carry an HTTP status. Anything thrown that is not a ServiceError becomes a 500 with a
 * generic message, so an unexpected exception can never leak a secret into a response body.
 */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
  ) {
    super(errors.join('; '));
    this.name = 'ServiceError';
  }

  static badRequest(message: string): ServiceError {
    return new ServiceError(400, [message]);
  }
  static forbidden(message = 'permission denied'): ServiceError {
    return new ServiceError(403, [message]);
  }
  static notFound(message = 'no handler for route'): ServiceError {
    return new ServiceError(404, [message]);
  }
  static methodNotAllowed(message = 'unsupported operation'): ServiceError {
    return new ServiceError(405, [message]);
  }
  static unavailable(message: string): ServiceError {
    return new ServiceError(503, [message]);
  }
  static badGateway(message: string): ServiceError {
    return new ServiceError(502, [message]);
  }
}

/** The 404 of a path no route declares; such answers carry only the default custom headers. */
export const UNSUPPORTED_PATH = 'unsupported path';

export const SEALED_MESSAGE = 'Service is sealed';
export const UNINITIALIZED_MESSAGE = 'Service is not initialized';

/** Turns any thrown value into a status and a list of messages safe to show a client. */
export function toErrorBody(err: unknown): { status: number; errors: string[] } {
  if (err instanceof ServiceError) return { status: err.status, errors: err.errors };
  return { status: 500, errors: ['internal error'] };
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
