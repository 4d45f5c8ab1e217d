/** The server's HTTP API as the UI calls it: same origin, token and namespace in headers. */

export interface Session {
  token: string;
  /** Namespace the UI works in ("" for the root, otherwise "a/b/"). */
  namespace: string;
  /** Namespace the token was obtained in: the top of what it can reach. */
  home: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
  ) {
    super(errors.length ? errors.join('; ') : `request failed with status ${status}`);
  }
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'LIST';

/** The envelope of an answer (or the raw body of sys/ answers that have none). */
export type Answer = Record<string, unknown> & {
  data?: Record<string, unknown> | null;
  auth?: Record<string, unknown> | null;
  wrap_info?: Record<string, unknown> | null;
  warnings?: string[] | null;
};

const SESSION_KEY = 'svc-ui-session';

/** The session lives for the browser tab only: a closed tab leaves no token behind. */
export function loadSession(): Session | undefined {
  const stored = sessionStorage.getItem(SESSION_KEY);
  return stored ? (JSON.parse(stored) as Session) : undefined;
}

export function saveSession(session: Session | undefined): void {
  if (session) sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(SESSION_KEY);
}

export interface CallOptions {
  body?: unknown;
  session?: Session;
  /** A token other than the session's (wrapping tokens in the tools). */
  token?: string;
  /** Wrap the answer in a single-use token with this TTL. */
  wrapTtl?: string;
}

/** One API call; an answer without a body (204) is an empty object; an error status throws ApiError. */
export async function call(method: Method, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  const token = options.token ?? options.session?.token;
  if (token) headers['X-Service-Token'] = token;
  if (options.session?.namespace) headers['X-Service-Namespace'] = options.session.namespace;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (options.wrapTtl) headers['X-Service-Wrap-TTL'] = options.wrapTtl;
  const res = await fetch(`/v1/${path.replace(/^\/+/, '')}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as Answer) : {};
  if (!res.ok) throw new ApiError(res.status, Array.isArray(parsed.errors) ? (parsed.errors as string[]) : []);
  return parsed;
}

/** A LIST whose 404 means "nothing here": the keys, or none. */
export async function listKeys(path: string, session: Session): Promise<string[]> {
  try {
    const answer = await call('LIST', path, { session });
    return (answer.data?.keys as string[] | undefined) ?? [];
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return [];
    throw err;
  }
}

/** Seal status, asked of the root namespace without a token. */
export interface SealStatus {
  type: string;
  initialized: boolean;
  sealed: boolean;
  t: number;
  n: number;
  progress: number;
  version: string;
  recovery_seal?: boolean;
}

export async function sealStatus(): Promise<SealStatus> {
  return (await call('GET', 'sys/seal-status')) as unknown as SealStatus;
}
