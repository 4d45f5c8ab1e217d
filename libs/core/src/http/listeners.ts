import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { ListenerConfig } from '@svc/config';
import { ResponseHeaderPolicy } from './headers';

/** Per-listener settings the request handler needs, found from the request's socket. */
export interface ListenerContext {
  config: ListenerConfig;
  headers: ResponseHeaderPolicy;
  tls: boolean;
}

const contexts = new WeakMap<object, ListenerContext>();

export function listenerOf(socket: object): ListenerContext | undefined {
  return contexts.get(socket);
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
 * Binds one TCP (or TLS) listener and hands its connections to the shared HTTP server, so every
 * listener has its own socket options, TLS settings and limits while routing stays in one place.
 */
export async function bindListener(config: ListenerConfig, httpServer: http.Server): Promise<BoundListener> {
  const useTls = !config.tlsDisable;
  const context: ListenerContext = {
    config,
    headers: new ResponseHeaderPolicy(config.customResponseHeaders, useTls),
    tls: useTls,
  };
  const accept = (socket: net.Socket) => {
    // Node's HTTP server turns Nagle off for the sockets it accepts itself; these it is handed.
    socket.setNoDelay(true);
    contexts.set(socket, context);
    httpServer.emit('connection', socket);
  };
  const server = useTls
    ? tls.createServer(
        {
          cert: readFileSync(config.tlsCertFile!),
          key: readFileSync(config.tlsKeyFile!),
          minVersion: TLS_VERSIONS[config.tlsMinVersion],
          ALPNProtocols: ['http/1.1'],
        },
        accept,
      )
    : net.createServer(accept);
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  return [host || '0.0.0.0', Number(address.slice(colon + 1))];
}
