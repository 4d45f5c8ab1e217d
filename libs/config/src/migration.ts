import type { StorageConfig } from '@svc/storage';
import { blocksOf } from './blocks';
import { parseTopLevel, readConfigFile, type ConfigFormat } from './parse';
import { parseMigrationStorage } from './stanzas';

/** What `svc operator migrate` reads: the store to copy and the store to copy it into. */
export interface MigrationConfig {
  source: StorageConfig;
  destination: StorageConfig;
}

const STANZAS = { source: 'storage_source', destination: 'storage_destination' } as const;

/** Reads a migration's configuration file (.hcl or .json). */
export async function loadMigrationConfigFile(path: string): Promise<MigrationConfig> {
  const { text, format } = await readConfigFile(path);
  return parseMigrationConfig(text, format, path);
}

/**
 * Parses a migration's configuration, as Vault's: a `storage_source` and a `storage_destination`
 * stanza, written as the server's `storage` stanza (postgresql or embedded), and nothing else.
 * The SVC_PG_CONNECTION_URL variable does not apply: it could not say which of the two it sets.
 */
export async function parseMigrationConfig(text: string, format: ConfigFormat, sourceName: string): Promise<MigrationConfig> {
  const top = parseTopLevel(text, format, sourceName);
  const raw = { source: top.raw(STANZAS.source), destination: top.raw(STANZAS.destination) };
  top.rejectUnknown('stanza');
  const stanza = async (side: keyof typeof STANZAS) => {
    const name = STANZAS[side];
    const config = await parseMigrationStorage(name, blocksOf(name, raw[side], sourceName), sourceName);
    if (!config) throw top.error(`a ${name} stanza is required, e.g. ${name} "postgresql" { connection_url = "postgres://..." }`);
    return config;
  };
  return { source: await stanza('source'), destination: await stanza('destination') };
}
