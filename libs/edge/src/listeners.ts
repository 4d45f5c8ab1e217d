import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type * as tls from 'node:tls';
import type { ListenerConfig, ListenerTimeouts } from '@svc/config';
import { ResponseHeaderPolicy } from './headers';

/** Per-listener settings the request handlers need. */
export interface ListenerContext {
  config: ListenerConfig;
  headers: ResponseHeaderPolicy;
  tls: boolean;
}

const TLS_VERSIONS: Record<ListenerConfig['tlsMinVersion'], tls.SecureVersion> = {
  tls10: 'TLSv1',
  tls11: 'TLSv1.1',
  tls12: 'TLSv1.2',
  tls13: 'TLSv1.3',
};

export interface BoundListener {
  config: ListenerConfig;
  /** The address actually bound (port 0 resolves to a free port). */
  address: string;
  close(): Promise<void>;
}

/**
 * Binds one listener: its own `node:http` (or `node:https`) server, so every listener has its own
 * TLS settings, limits and timeouts, and Node enforces the head and request timeouts on its
 * connections (a server handed sockets it did not accept itself tracks none of them). `attach`
 * adds the request handlers, which the listener's context reaches through their closure.
 */
export async function bindListener(config: ListenerConfig, attach: (server: http.Server, context: ListenerContext) => void): Promise<BoundListener> {
  const useTls = !config.tlsDisable;
  const context: ListenerContext = {
    config,
    headers: new ResponseHeaderPolicy(config.customResponseHeaders, useTls),
    tls: useTls,
  };
  const options = serverOptions(config.timeouts);
  const server = useTls
    ? https.createServer({
        ...options,
        cert: readFileSync(config.tlsCertFile!),
        key: readFileSync(config.tlsKeyFile!),
        minVersion: TLS_VERSIONS[config.tlsMinVersion],
        requestCert: Boolean(config.tlsRequireAndVerifyClientCert || config.tlsClientCaFile),
        rejectUnauthorized: Boolean(config.tlsRequireAndVerifyClientCert),
        ...(config.tlsClientCaFile && { ca: readFileSync(config.tlsClientCaFile) }),
        ALPNProtocols: ['http/1.1'],
      })
    : http.createServer(options);
  attach(server, context);
  const [host, port] = splitAddress(config.address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as net.AddressInfo;
  return {
    config,
    address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** How often, at most, Node looks for connections past their head or request timeout. */
const MAX_CHECK_INTERVAL_MS = 1000;

/**
 * Node's names for the listener's timeouts. Node refuses a head timeout longer than the request
 * timeout; the request timeout covers the head too, so the shorter one is what applies anyway.
 */
function serverOptions(timeouts: ListenerTimeouts): http.ServerOptions {
  const { readHeaderMs, readMs, idleMs } = timeouts;
  const headersTimeout = readMs > 0 && readHeaderMs > 0 ? Math.min(readHeaderMs, readMs) : readHeaderMs || readMs;
  const shortest = Math.min(...[headersTimeout, readMs].filter((ms) => ms > 0));
  return {
    noDelay: true,
    // The front refuses a missing Host itself, naming it, and Node would answer without an event (frontend.ts, refuseHead).
    requireHostHeader: false,
    headersTimeout,
    requestTimeout: readMs,
    keepAliveTimeout: idleMs,
    // Node checks every 30 s by default: a 10 s head timeout could then hold a connection 40 s.
    connectionsCheckingInterval: Math.max(10, Math.min(MAX_CHECK_INTERVAL_MS, Math.floor(shortest / 4))),
  };
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  return [host || '0.0.0.0', Number(address.slice(colon + 1))];
}
