import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { HttpResult } from './exchange';

/**
 * The page may load scripts, styles and images from this origin only and talk to this origin's API
 * only; nothing inline, no frames, no plugins, no form posts elsewhere.
 */
export const UI_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/** Vite names what it emits under assets/ by content hash: such a file never changes. */
const HASHED = 'public, max-age=31536000, immutable';
/** index.html names the current hashed files, so it is always fetched afresh. */
const FRESH = 'no-cache';

/** Where the built UI lies in a compiled tree (dist/ui beside dist/libs), from this file's place. */
export const DEFAULT_UI_DIRECTORY = path.resolve(__dirname, '../../../ui');

/**
 * The web UI's built files, read once at start (a few hundred KB), served under /ui/. A path that
 * names no file is a route of the single-page app: it gets index.html.
 */
export class UiAssets {
  private readonly files = new Map<string, HttpResult>();
  private readonly index: HttpResult;

  constructor(directory: string) {
    const indexFile = path.join(directory, 'index.html');
    if (!existsSync(indexFile)) throw new Error(`the web UI is not built: ${indexFile} is missing (npm run build)`);
    for (const relative of listFiles(directory)) {
      const body = readFileSync(path.join(directory, relative));
      const contentType = CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream';
      const cache = relative.startsWith('assets/') ? HASHED : FRESH;
      const headers: Record<string, string> = { 'cache-control': cache };
      if (contentType.startsWith('text/html')) headers['content-security-policy'] = UI_CONTENT_SECURITY_POLICY;
      this.files.set(relative, { status: 200, body, contentType, headers });
    }
    this.index = this.files.get('index.html')!;
  }

  /** The answer for a path under /ui/ (given without that prefix and without a query). */
  serve(relative: string): HttpResult {
    const file = this.files.get(relative);
    if (file) return file;
    // A missing hashed asset is an error (an old page after an upgrade), not an app route.
    if (relative.startsWith('assets/')) return { status: 404, body: 'not found', contentType: 'text/plain; charset=utf-8' };
    return this.index;
  }
}

function listFiles(directory: string, prefix = ''): string[] {
  return readdirSync(path.join(directory, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(directory, `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  );
}
