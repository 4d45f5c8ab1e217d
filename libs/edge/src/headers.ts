import type { CustomResponseHeaders } from '@svc/config';

/** Headers every response carries (Document 1, rule 4). */
const SECURITY_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};
const HSTS = 'max-age=31536000; includeSubDomains';

/** Header names and values in turn, the form Node's `writeHead` takes fastest. */
export type HeaderList = readonly (string | string[])[];

/**
 * Resolves the custom response headers of a listener for each status code once and caches the
 * result, so the per-request cost is one map lookup. Rule 2: an exact-code selector beats a class
 * selector, which beats `default`, header by header.
 */
export class ResponseHeaderPolicy {
  private readonly cache = new Map<number, HeaderList>();

  constructor(
    private readonly custom: CustomResponseHeaders,
    private readonly tls: boolean,
  ) {}

  /** Headers for a response with `status`; `defaultsOnly` for the unknown-path 404 (rule 3). */
  forStatus(status: number, defaultsOnly = false): HeaderList {
    const key = defaultsOnly ? -status : status;
    let headers = this.cache.get(key);
    if (!headers) {
      headers = Object.entries(this.resolve(status, defaultsOnly)).flat();
      this.cache.set(key, headers);
    }
    return headers;
  }

  private resolve(status: number, defaultsOnly: boolean): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = { ...SECURITY_HEADERS };
    if (this.tls) out['strict-transport-security'] = HSTS;
    const layers = defaultsOnly ? ['default'] : ['default', `${Math.floor(status / 100)}xx`, String(status)];
    for (const selector of layers) {
      for (const [name, values] of Object.entries(this.custom[selector] ?? {})) {
        out[name.toLowerCase()] = values.length === 1 ? values[0] : values;
      }
    }
    return out;
  }
}
