import { readFile } from 'node:fs/promises';
import { extname, isAbsolute } from 'node:path';
import type { ServerConfig } from './types';
import { blocksOf } from './blocks';
import { parseReplication } from './replication';
import { withSecretsFromEnvironment } from './environment';
import { ConfigError } from './errors';
import { parseHcl } from './hcl';
import { parseListener } from './listener';
import { parseProviderEndpoints } from './provider-endpoints';
import { isObject, Section } from './section';
import { parseBus, parseLocks, parseSeals, parseStorage } from './stanzas';
import { parseTelemetry } from './telemetry';

export type ConfigFormat = 'hcl' | 'json';

export const DEFAULT_LEASE_TTL_SECONDS = 768 * 3600;
/** How long a request may take by default, as in Vault. */
export const DEFAULT_MAX_REQUEST_DURATION_MS = 90_000;
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/**
 * Reads a server configuration file; the format follows the extension (.hcl or .json).
 * `knownServices` are the names its `services` may list (the server's registry knows them).
 */
export async function loadConfigFile(path: string, knownServices: readonly string[]): Promise<ServerConfig> {
  const { text, format } = await readConfigFile(path);
  return parseConfig(text, format, path, process.env, knownServices);
}

/** A configuration file's text and format (from its extension: .hcl or .json). */
export async function readConfigFile(path: string): Promise<{ text: string; format: ConfigFormat }> {
  const extension = extname(path).toLowerCase();
  if (extension !== '.hcl' && extension !== '.json') {
    throw new ConfigError(`${path}: configuration files must end in .hcl or .json`);
  }
  try {
    return { text: await readFile(path, 'utf8'), format: extension === '.hcl' ? 'hcl' : 'json' };
  } catch (err) {
    throw new ConfigError(`${path}: cannot read configuration file (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

/** The top-level object of a configuration's text. */
export function parseTopLevel(text: string, format: ConfigFormat, sourceName: string): Section {
  const raw = format === 'hcl' ? parseHcl(text, sourceName) : decodeJson(text, sourceName);
  if (!isObject(raw)) throw new ConfigError(`${sourceName}: the configuration must be an object`);
  return new Section(sourceName, raw);
}

/**
 * Parses and validates a configuration; `sourceName` prefixes every error and warning. The
 * environment's SVC_* secret variables override their fields (see `SECRET_ENVIRONMENT_VARIABLES`).
 * `services` may list only `knownServices`.
 */
export async function parseConfig(
  text: string,
  format: ConfigFormat,
  sourceName: string,
  environment: NodeJS.ProcessEnv = process.env,
  knownServices: readonly string[] = [],
): Promise<ServerConfig> {
  return buildConfig(parseTopLevel(text, format, sourceName), sourceName, environment, knownServices);
}

function decodeJson(text: string, sourceName: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(`${sourceName}: invalid JSON: ${describeJsonError(text, (err as Error).message)}`);
  }
}

/** The parser's message with a line and column, without the excerpt of the text it may quote
 * (the file can hold passwords). */
function describeJsonError(text: string, message: string): string {
  const withoutExcerpt = message.replace(/, ".*" is not valid JSON$/s, '');
  const position = /in JSON at position (\d+)/.exec(withoutExcerpt);
  if (!position) return withoutExcerpt;
  const before = text.slice(0, Number(position[1])).split('\n');
  const where = `line ${before.length} column ${before[before.length - 1].length + 1}`;
  return withoutExcerpt.replace(/in JSON at position \d+.*$/s, `at ${where}`);
}

async function buildConfig(top: Section, sourceName: string, environment: NodeJS.ProcessEnv, knownServices: readonly string[]): Promise<ServerConfig> {
  const warnings: string[] = [];
  const stanza = (name: string) =>
    withSecretsFromEnvironment(name, blocksOf(name, top.raw(name), sourceName), environment, sourceName, warnings);

  // Engine services have no listener; the gateway checks it has one when it starts.
  const listenerBlocks = stanza('listener');
  const listeners = [];
  for (const [index, block] of listenerBlocks.entries()) {
    listeners.push(await parseListener(block, `${sourceName}: listener "${block.type}" [${index}]`, warnings));
  }

  const storage = await parseStorage(stanza('storage'), sourceName, warnings);
  if (!storage) throw top.error('a storage stanza is required, e.g. storage "embedded" { path = "./data" }');
  const bus = await parseBus(stanza('bus'), sourceName, warnings);
  const locks = await parseLocks(stanza('locks'), sourceName, warnings);
  const { seal, disabledSeal } = await parseSeals(stanza('seal'), sourceName, warnings);

  // 0 means the system default, as in Vault.
  const defaultLeaseTtl = top.durationSeconds('default_lease_ttl') || DEFAULT_LEASE_TTL_SECONDS;
  const maxLeaseTtl = top.durationSeconds('max_lease_ttl') || DEFAULT_LEASE_TTL_SECONDS;
  if (defaultLeaseTtl > maxLeaseTtl) throw top.error('default_lease_ttl must not exceed max_lease_ttl');

  const maxRequestDurationMs = top.durationMs('default_max_request_duration') ?? DEFAULT_MAX_REQUEST_DURATION_MS;
  if (maxRequestDurationMs <= 0) throw top.error('default_max_request_duration must be positive');

  const apiAddr = url(top, 'api_addr');
  const clusterAddr = url(top, 'cluster_addr');
  const services = serviceNames(top, knownServices);
  const providerEndpoints = parseProviderEndpoints(top.raw('provider_endpoints'), sourceName, environment, warnings);
  const telemetry = parseTelemetry(top.raw('telemetry'), sourceName, warnings);
  const replication = parseReplication(top.raw('replication'), sourceName, warnings);
  const pluginDirectory = top.string('plugin_directory');
  if (pluginDirectory !== undefined && !isAbsolute(pluginDirectory)) throw top.error('plugin_directory must be an absolute path');
  const workers = workerCount(top);
  const cacheSize = readCacheSize(top);
  const config: ServerConfig = {
    listeners,
    storage,
    ...(bus ? { bus } : {}),
    ...(locks ? { locks } : {}),
    seal,
    ...(disabledSeal ? { disabledSeal } : {}),
    ui: top.bool('ui', false),
    ...(apiAddr !== undefined ? { apiAddr } : {}),
    ...(clusterAddr !== undefined ? { clusterAddr } : {}),
    logLevel: logLevel(top),
    defaultLeaseTtl,
    maxLeaseTtl,
    maxRequestDurationMs,
    ...(workers !== undefined ? { workers } : {}),
    ...(cacheSize !== undefined ? { cacheSize } : {}),
    ...(services ? { services } : {}),
    providerEndpoints,
    telemetry,
    ...(replication ? { replication } : {}),
    ...(pluginDirectory !== undefined ? { pluginDirectory } : {}),
    warnings,
  };
  top.warnUnknown(warnings);
  return config;
}

function url(section: Section, key: string): string | undefined {
  const value = section.string(key);
  if (value === undefined) return undefined;
  if (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol)) {
    throw section.error(`${key} must be a URL such as https://svc.example.com:8200`);
  }
  return value;
}

/** Upper bound of `workers`: far above any core count, low enough to catch a typo. */
export const MAX_WORKERS = 256;

function workerCount(section: Section): number | undefined {
  const workers = section.int('workers');
  if (workers !== undefined && (workers < 1 || workers > MAX_WORKERS)) throw section.error(`workers must be between 1 and ${MAX_WORKERS}`);
  return workers;
}

/** `disable_cache` turns the read cache off (0 entries); `cache_size` sizes it, in entries. */
function readCacheSize(section: Section): number | undefined {
  const size = section.int('cache_size');
  if (section.bool('disable_cache', false)) return 0;
  if (size !== undefined && size < 1) throw section.error('cache_size must be a positive number of entries (disable_cache turns the cache off)');
  return size;
}

function logLevel(section: Section): ServerConfig['logLevel'] {
  const value = (section.string('log_level') ?? 'info').trim().toLowerCase();
  const level = value === 'warning' ? 'warn' : value;
  const known = LOG_LEVELS.find((candidate) => candidate === level);
  if (!known) throw section.error(`log_level must be one of ${LOG_LEVELS.join(', ')}`);
  return known;
}

function serviceNames(section: Section, known: readonly string[]): string[] | undefined {
  const names = section.stringList('services');
  if (names === undefined) return undefined;
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw section.error(`services: unknown service ${unknown.map((name) => `"${name}"`).join(', ')} (known: ${known.join(', ')})`);
  }
  return [...new Set(names)];
}
