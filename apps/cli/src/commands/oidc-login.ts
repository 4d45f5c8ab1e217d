/**
 * `svc login -method=oidc [role=NAME] [listenaddress=localhost] [port=8250] [callbackhost=...]
 * [callbackport=...] [callbackmethod=http]`: as Vault's CLI, it listens on the local address for
 * the provider's redirect, prints the provider's URL for the person to open, and turns the code the
 * provider sends back into a token.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuthBlock, SvcClient } from '@svc/sdk';
import { UsageError } from './args';
import { println, type CliIO } from './context';

/** How long the CLI waits for the person to finish at the provider. */
const CALLBACK_WAIT_MS = 5 * 60_000;

const CALLBACK_PATH = '/oidc/callback';

/** The login options the CLI uses itself; the server sees none of them. */
interface ListenOptions {
  role?: string;
  listenAddress: string;
  port: number;
  callbackHost?: string;
  callbackPort?: string;
  callbackMethod: string;
}

function listenOptions(data: Record<string, unknown>): ListenOptions {
  const text = (name: string) => (data[name] === undefined ? undefined : String(data[name]));
  const known = new Set(['role', 'listenaddress', 'port', 'callbackhost', 'callbackport', 'callbackmethod', 'skip_browser']);
  const unknown = Object.keys(data).filter((key) => !known.has(key));
  if (unknown.length) throw new UsageError(`oidc login does not take ${unknown.map((key) => `"${key}"`).join(', ')}`);
  const port = Number(text('port') ?? 8250);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('port must be a TCP port number');
  const callbackMethod = text('callbackmethod') ?? 'http';
  if (callbackMethod !== 'http' && callbackMethod !== 'https') throw new UsageError('callbackmethod must be http or https');
  return { role: text('role'), listenAddress: text('listenaddress') ?? 'localhost', port, callbackHost: text('callbackhost'), callbackPort: text('callbackport'), callbackMethod };
}

/** What the provider's redirect brought: the state and code, or the provider's error. */
type Redirect = { state: string; code: string } | { error: string };

function redirectOf(req: IncomingMessage): Redirect | undefined {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== CALLBACK_PATH) return undefined;
  const error = url.searchParams.get('error');
  if (error) return { error: `${error}${url.searchParams.get('error_description') ? `: ${url.searchParams.get('error_description')}` : ''}` };
  return { state: url.searchParams.get('state') ?? '', code: url.searchParams.get('code') ?? '' };
}

function answerBrowser(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  const escaped = message.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  res.end(`<!doctype html><title>svc login</title><p>${escaped}</p>`);
}

export async function oidcLogin(io: CliIO, client: SvcClient, mount: string, data: Record<string, unknown>): Promise<AuthBlock> {
  const options = listenOptions(data);
  const clientNonce = randomBytes(20).toString('hex');
  let settle: (outcome: AuthBlock | Error) => void = () => {};
  const outcome = new Promise<AuthBlock | Error>((resolve) => (settle = resolve));
  const server = createServer((req, res) => {
    const redirect = redirectOf(req);
    if (!redirect) return answerBrowser(res, 404, 'Not found.');
    if ('error' in redirect) {
      answerBrowser(res, 400, `The identity provider refused the login: ${redirect.error}`);
      return settle(new Error(`the identity provider refused the login: ${redirect.error}`));
    }
    client.logins.oidcCallback(redirect.state, redirect.code, { clientNonce, mount }).then(
      (auth) => {
        answerBrowser(res, 200, 'Signed in. You may close this window and return to the terminal.');
        settle(auth);
      },
      (err: Error) => {
        answerBrowser(res, 400, `The login failed: ${err.message}`);
        settle(err);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new UsageError(`cannot listen on ${options.listenAddress}:${options.port} for the OIDC callback (${err.code ?? err.message})`)));
    server.listen(options.port, options.listenAddress, resolve);
  });
  const timer = setTimeout(() => settle(new Error(`no OIDC callback within ${CALLBACK_WAIT_MS / 60_000} minutes`)), CALLBACK_WAIT_MS);
  try {
    const port = options.callbackPort ?? String((server.address() as AddressInfo).port);
    const redirectUri = `${options.callbackMethod}://${options.callbackHost ?? options.listenAddress}:${port}${CALLBACK_PATH}`;
    const authUrl = await client.logins.oidcAuthUrl(redirectUri, { role: options.role, clientNonce, mount });
    println(io.stderr, `Complete the login at your OIDC provider: open this URL in a browser.\n\n    ${authUrl}\n\nWaiting for OIDC authentication to complete...`);
    const result = await outcome;
    if (result instanceof Error) throw result;
    return result;
  } finally {
    clearTimeout(timer);
    server.closeAllConnections();
    server.close();
  }
}
