import { access, constants, stat } from 'node:fs/promises';
import type { ListenerConfig } from './types';
import type { Block } from './blocks';
import { parseCustomResponseHeaders } from './headers';
import { Section } from './section';

export const DEFAULT_ADDRESS = '127.0.0.1:8200';
export const DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024;
const TLS_VERSIONS = ['tls10', 'tls11', 'tls12', 'tls13'] as const;
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/;

export async function parseListener(block: Block, where: string, warnings: string[]): Promise<ListenerConfig> {
  const section = new Section(where, block.body);
  if (block.type !== 'tcp') throw section.error(`unsupported listener type "${block.type}" (supported: tcp)`);

  const address = section.string('address') ?? DEFAULT_ADDRESS;
  const hostPort = HOST_PORT.exec(address);
  if (!hostPort || Number(hostPort[2]) > 65535) throw section.error('address must be host:port, e.g. 127.0.0.1:8200');

  const tlsDisable = section.bool('tls_disable', false);
  const tlsCertFile = section.string('tls_cert_file');
  const tlsKeyFile = section.string('tls_key_file');
  if (!tlsDisable) {
    await requireReadableFile(section, 'tls_cert_file', tlsCertFile);
    await requireReadableFile(section, 'tls_key_file', tlsKeyFile);
  }

  const tlsMinVersion = section.string('tls_min_version') ?? 'tls12';
  if (!isTlsVersion(tlsMinVersion)) {
    throw section.error(`tls_min_version must be one of ${TLS_VERSIONS.join(', ')}`);
  }

  const listener: ListenerConfig = {
    type: 'tcp',
    address,
    tlsDisable,
    ...(tlsCertFile !== undefined ? { tlsCertFile } : {}),
    ...(tlsKeyFile !== undefined ? { tlsKeyFile } : {}),
    tlsMinVersion,
    maxRequestSize: maxRequestSize(section.int('max_request_size')),
    requireRequestHeader: section.bool('require_request_header', false),
    customResponseHeaders: parseCustomResponseHeaders(section, 'custom_response_headers'),
  };
  section.warnUnknown(warnings);
  return listener;
}

/** Vault's rule: unset or 0 means the default, a negative value disables the limit. */
function maxRequestSize(configured: number | undefined): number {
  if (configured === undefined || configured === 0) return DEFAULT_MAX_REQUEST_SIZE;
  return configured < 0 ? Number.POSITIVE_INFINITY : configured;
}

function isTlsVersion(value: string): value is ListenerConfig['tlsMinVersion'] {
  return (TLS_VERSIONS as readonly string[]).includes(value);
}

async function requireReadableFile(section: Section, key: string, path: string | undefined): Promise<void> {
  if (path === undefined || path === '') throw section.error(`${key} is required unless tls_disable is set`);
  let isFile: boolean;
  try {
    await access(path, constants.R_OK);
    isFile = (await stat(path)).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw section.error(`${key} "${path}" cannot be read (${code})`);
  }
  if (!isFile) throw section.error(`${key} "${path}" is not a file`);
}
