import { access, constants, stat } from 'node:fs/promises';
import type { JsonLimits, ListenerConfig, ListenerTimeouts } from './types';
import type { Block } from './blocks';
import { parseCustomResponseHeaders } from './headers';
import { Section } from './section';
import { parseListenerTelemetry } from './telemetry';

export const DEFAULT_ADDRESS = '127.0.0.1:8200';
export const DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024;
/** Vault's defaults: 10 s for a head, 30 s for a request, no write limit, 5 minutes idle. */
export const DEFAULT_TIMEOUTS: ListenerTimeouts = { readHeaderMs: 10_000, readMs: 30_000, writeMs: 0, idleMs: 300_000 };
/** Vault's defaults for max_json_depth, max_json_string_value_length and the entry counts. */
export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 500, maxStringValueLength: 1024 * 1024, maxObjectEntryCount: 10_000, maxArrayElementCount: 10_000 };
const TLS_VERSIONS = ['tls10', 'tls11', 'tls12', 'tls13'] as const;
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/;

/** The API port + 1 on the API's host, as Vault's; any free port when the API takes any (port 0). */
export function defaultClusterAddress(apiAddress: string): string {
  const [, host, port] = HOST_PORT.exec(apiAddress) ?? [];
  return `${host}:${Number(port) === 0 ? 0 : Number(port) + 1}`;
}

export async function parseListener(block: Block, where: string, warnings: string[]): Promise<ListenerConfig> {
  const section = new Section(where, block.body);
  if (block.type !== 'tcp') throw section.error(`unsupported listener type "${block.type}" (supported: tcp)`);

  const address = section.string('address') ?? DEFAULT_ADDRESS;
  const hostPort = HOST_PORT.exec(address);
  if (!hostPort || Number(hostPort[2]) > 65535) throw section.error('address must be host:port, e.g. 127.0.0.1:8200');

  const clusterAddress = section.string('cluster_address') ?? defaultClusterAddress(address);
  const clusterHostPort = HOST_PORT.exec(clusterAddress);
  if (!clusterHostPort || Number(clusterHostPort[2]) > 65535) throw section.error('cluster_address must be host:port, e.g. 127.0.0.1:8201');

  const tlsDisable = section.bool('tls_disable', false);
  const tlsCertFile = section.string('tls_cert_file');
  const tlsKeyFile = section.string('tls_key_file');
  const tlsRequireAndVerifyClientCert = section.bool('tls_require_and_verify_client_cert', false);
  const tlsClientCaFile = section.string('tls_client_ca_file');
  if (!tlsDisable) {
    await requireReadableFile(section, 'tls_cert_file', tlsCertFile);
    await requireReadableFile(section, 'tls_key_file', tlsKeyFile);
    if (tlsClientCaFile !== undefined) await requireReadableFile(section, 'tls_client_ca_file', tlsClientCaFile);
  } else if (tlsRequireAndVerifyClientCert) {
    throw section.error('tls_require_and_verify_client_cert needs TLS, but tls_disable is set');
  }

  const tlsMinVersion = section.string('tls_min_version') ?? 'tls12';
  if (!isTlsVersion(tlsMinVersion)) {
    throw section.error(`tls_min_version must be one of ${TLS_VERSIONS.join(', ')}`);
  }

  const listener: ListenerConfig = {
    type: 'tcp',
    address,
    clusterAddress,
    tlsDisable,
    ...(tlsCertFile !== undefined ? { tlsCertFile } : {}),
    ...(tlsKeyFile !== undefined ? { tlsKeyFile } : {}),
    tlsMinVersion,
    ...(tlsRequireAndVerifyClientCert && { tlsRequireAndVerifyClientCert }),
    ...(tlsClientCaFile !== undefined && { tlsClientCaFile }),
    maxRequestSize: maxRequestSize(section.int('max_request_size')),
    requireRequestHeader: section.bool('require_request_header', false),
    disableUnauthedRekeyEndpoints: section.bool('disable_unauthed_rekey_endpoints', false),
    disableUnauthedGenerateRootEndpoints: section.bool('disable_unauthed_generate_root_endpoints', false),
    customResponseHeaders: parseCustomResponseHeaders(section, 'custom_response_headers'),
    unauthenticatedMetricsAccess: parseListenerTelemetry(section, warnings),
    timeouts: parseTimeouts(section),
    jsonLimits: {
      maxDepth: jsonLimit(section, 'max_json_depth', DEFAULT_JSON_LIMITS.maxDepth),
      maxStringValueLength: jsonLimit(section, 'max_json_string_value_length', DEFAULT_JSON_LIMITS.maxStringValueLength),
      maxObjectEntryCount: jsonLimit(section, 'max_json_object_entry_count', DEFAULT_JSON_LIMITS.maxObjectEntryCount),
      maxArrayElementCount: jsonLimit(section, 'max_json_array_element_count', DEFAULT_JSON_LIMITS.maxArrayElementCount),
    },
  };
  section.warnUnknown(warnings);
  return listener;
}

/** Vault's rule: unset or 0 means the default, a negative value disables the limit. */
function maxRequestSize(configured: number | undefined): number {
  if (configured === undefined || configured === 0) return DEFAULT_MAX_REQUEST_SIZE;
  return configured < 0 ? Number.POSITIVE_INFINITY : configured;
}

/**
 * Vault's fallbacks: a zero head timeout takes the request timeout, and a zero idle timeout the
 * request timeout, then the head timeout.
 */
function parseTimeouts(section: Section): ListenerTimeouts {
  const readMs = section.durationMs('http_read_timeout') ?? DEFAULT_TIMEOUTS.readMs;
  const readHeaderMs = section.durationMs('http_read_header_timeout') ?? DEFAULT_TIMEOUTS.readHeaderMs;
  const idleMs = section.durationMs('http_idle_timeout') ?? DEFAULT_TIMEOUTS.idleMs;
  return {
    readHeaderMs: readHeaderMs || readMs,
    readMs,
    writeMs: section.durationMs('http_write_timeout') ?? DEFAULT_TIMEOUTS.writeMs,
    idleMs: idleMs || readMs || readHeaderMs,
  };
}

/** Unset or 0 means Vault's default. */
function jsonLimit(section: Section, key: string, fallback: number): number {
  const configured = section.int(key);
  if (configured !== undefined && configured < 0) throw section.error(`${key} must be 0 (the default) or more`);
  return configured || fallback;
}

function isTlsVersion(value: string): value is ListenerConfig['tlsMinVersion'] {
  return (TLS_VERSIONS as readonly string[]).includes(value);
}

/** A 400-style config error unless `path` names a readable file. */
export async function requireReadableFile(section: Section, key: string, path: string | undefined): Promise<void> {
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
