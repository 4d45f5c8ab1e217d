import { EmbeddedPhysical, holdsEarlierEmbeddedFormat } from './embedded/embedded';
import { InmemPhysical } from './inmem';
import { PostgresPhysical } from './postgres';
import type { TableUse } from './sql/table-use-lock';
import type { Physical, StorageConfig } from './types';

type Options = StorageConfig['options'];

const KNOWN_OPTIONS: Record<StorageConfig['type'], string[]> = {
  postgresql: ['connection_url', 'table', 'max_connections'],
  embedded: ['path'],
  inmem: [],
};

function configError(type: string, problem: string): Error {
  return new Error(`storage "${type}": ${problem}`);
}

function checkKnownOptions(type: StorageConfig['type'], options: Options): void {
  const known = KNOWN_OPTIONS[type];
  const unknown = Object.keys(options).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    const expected = known.length > 0 ? `expected ${known.join(', ')}` : 'it takes no options';
    throw configError(type, `unknown option(s) ${unknown.join(', ')}; ${expected}`);
  }
}

function optionalString(type: string, options: Options, name: string): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw configError(type, `option ${name} must be a non-empty string`);
  return value;
}

function requiredString(type: string, options: Options, name: string): string {
  const value = optionalString(type, options, name);
  if (value === undefined) throw configError(type, `option ${name} is required`);
  return value;
}

function postgres(options: Options, use: TableUse): PostgresPhysical {
  // The URL may hold a password: errors describe it, never echo it.
  const connectionUrl = requiredString('postgresql', options, 'connection_url');
  if (!/^postgres(ql)?:\/\//.test(connectionUrl)) {
    throw configError('postgresql', 'option connection_url must start with postgres:// or postgresql://');
  }
  // The table name itself is checked where it is quoted into SQL (PostgresPhysical's constructor).
  const table = optionalString('postgresql', options, 'table');
  const maxConnections = options.max_connections;
  if (maxConnections !== undefined && !(Number.isInteger(maxConnections) && (maxConnections as number) > 0)) {
    throw configError('postgresql', 'option max_connections must be a positive integer');
  }
  return new PostgresPhysical({ connectionUrl, table, maxConnections: maxConnections as number | undefined, use });
}

export interface PhysicalPlacement {
  /** In a gateway worker: the pid of its server, which holds an embedded data directory's lock. */
  lockHeldBy?: number;
  /** A server's store, or a storage migration's, which holds a PostgreSQL table exclusively (the embedded one holds its directory either way). */
  use?: TableUse;
}

/** Builds the configured backend (not yet opened). */
export function createPhysical(config: StorageConfig, placement: PhysicalPlacement = {}): Physical {
  const type = config.type as string;
  if (!Object.hasOwn(KNOWN_OPTIONS, type)) {
    throw configError(type, `unknown storage type; expected one of ${Object.keys(KNOWN_OPTIONS).join(', ')}`);
  }
  const options = config.options ?? {};
  checkKnownOptions(config.type, options);
  switch (config.type) {
    case 'postgresql':
      return postgres(options, placement.use ?? 'server');
    case 'embedded':
      return new EmbeddedPhysical({ path: requiredString('embedded', options, 'path'), lockHeldBy: placement.lockHeldBy });
    case 'inmem':
      return new InmemPhysical();
  }
}

/**
 * A store for a storage migration, which holds it alone: as `createPhysical` builds it, but an
 * embedded directory of the earlier format (PGlite) is opened with the earlier store, so that its
 * data can be moved.
 */
export async function createMigrationStore(config: StorageConfig): Promise<Physical> {
  if (config.type === 'embedded' && typeof config.options.path === 'string' && holdsEarlierEmbeddedFormat(config.options.path)) {
    const { LegacyEmbeddedPhysical } = await import('./legacy-embedded');
    return new LegacyEmbeddedPhysical({ path: config.options.path });
  }
  return createPhysical(config, { use: 'migration' });
}
