/** The API answered with status >= 400; `errors` is the body's `errors` list. */
export class SvcApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
    readonly method: string,
    readonly path: string,
  ) {
    super(`${method} ${path}: status ${status}${errors.length > 0 ? `: ${errors.join('; ')}` : ''}`);
    this.name = 'SvcApiError';
  }
}

/** The request never got an HTTP answer (connection refused, DNS failure, timeout). */
export class SvcConnectionError extends Error {
  constructor(address: string, cause: unknown) {
    super(`cannot reach ${address}: ${describeCause(cause)}`, { cause });
    this.name = 'SvcConnectionError';
  }
}

// Duck-typed because fetch's errors may come from another realm (instanceof Error fails there).
function describeCause(cause: unknown): string {
  const error = cause as { message?: unknown; cause?: { message?: unknown } } | null;
  // fetch reports "fetch failed" and keeps the socket error (ECONNREFUSED, ENOTFOUND) as its cause.
  const message = error?.cause?.message ?? error?.message;
  return typeof message === 'string' ? message : String(cause);
}

// A non-JSON error body (a proxy's HTML page) is reported, but not in full.
const MAX_RAW_ERROR_CHARS = 500;

/** The error for a status >= 400: the body's `errors` list, or the start of a non-JSON body. */
export function apiError(method: string, path: string, status: number, body: unknown, rawText = ''): SvcApiError {
  const listed = (body as { errors?: unknown } | null)?.errors;
  const excerpt = rawText.trim().slice(0, MAX_RAW_ERROR_CHARS);
  const errors = Array.isArray(listed) ? listed.map(String) : body === null && excerpt ? [excerpt] : [];
  return new SvcApiError(status, errors, method, `/v1/${path.replace(/^\/+/, '')}`);
}
