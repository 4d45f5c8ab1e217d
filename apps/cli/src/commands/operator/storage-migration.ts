import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadMigrationConfigFile, type MigrationConfig } from '@svc/config';
import {
  clearMigrationLock, createMigrationStore, DEFAULT_TABLE, migrateStorage, MigrationStopped, resumeHint,
  type MigrationProgress, type Physical, type StorageConfig,
} from '@svc/storage';
import { UsageError, type ParsedArgs } from '../args';
import { println, type CliIO } from '../context';

/** Where a store is, for messages: never its connection URL, which may hold a password. */
function describeStore(config: StorageConfig): string {
  if (config.type !== 'postgresql') return `${config.type} ${resolve(String(config.options.path))}`;
  const table = `postgresql table "${String(config.options.table ?? DEFAULT_TABLE)}"`;
  const url = URL.parse(String(config.options.connection_url));
  return url ? `${table} on ${url.host}${url.pathname}` : table;
}

function sameStore(a: StorageConfig, b: StorageConfig): boolean {
  if (a.type !== b.type) return false;
  if (a.type !== 'postgresql') return resolve(String(a.options.path)) === resolve(String(b.options.path));
  return a.options.connection_url === b.options.connection_url && (a.options.table ?? DEFAULT_TABLE) === (b.options.table ?? DEFAULT_TABLE);
}

/** Opens a store for the migration, which holds it alone; a refusal names the stanza. */
async function openStore(stanza: string, config: StorageConfig): Promise<Physical> {
  const store = await createMigrationStore(config);
  try {
    await store.open();
  } catch (err) {
    throw new Error(`${stanza} (${describeStore(config)}): ${err instanceof Error ? err.message : String(err)}`);
  }
  return store;
}

function progressLine(progress: MigrationProgress): string {
  switch (progress.phase) {
    case 'entries':
      return `copied ${progress.copied} entries (resume point: ${JSON.stringify(progress.resumeFrom)})`;
    case 'metadata':
      return `copied ${progress.copied} replication metadata records`;
    case 'log':
      return `copied ${progress.copied} log entries`;
  }
}

/** `svc operator migrate`: see the command's declaration (migrate.ts). Prints keys and counts, never a value. */
export async function runStorageMigration(io: CliIO, { flags }: ParsedArgs): Promise<number> {
  const file = flags.config as string | undefined;
  if (!file) throw new UsageError('-config is required: a file with a storage_source and a storage_destination stanza');
  const start = flags.start as string | undefined;
  if (flags.reset === true && start !== undefined) throw new UsageError('-reset copies nothing, so it takes no -start');
  const config = await loadMigrationConfigFile(file);
  if (sameStore(config.source, config.destination)) throw new UsageError(`storage_source and storage_destination are the same store (${describeStore(config.source)})`);
  return flags.reset === true ? reset(io, config) : migrate(io, config, start);
}

async function reset(io: CliIO, config: MigrationConfig): Promise<number> {
  const destination = await openStore('storage_destination', config.destination);
  try {
    const lock = await clearMigrationLock(destination);
    println(
      io.stdout,
      lock
        ? `Success! Removed the lock of the migration into ${describeStore(config.destination)} (started ${lock.started}, copied up to ${JSON.stringify(lock.resumeFrom)}); servers may start on it as it is.`
        : `${describeStore(config.destination)} holds no migration lock: nothing to reset.`,
    );
    return 0;
  } finally {
    await destination.close();
  }
}

/** The source, which must hold something: a mistyped one would otherwise be copied, empty, without a word. */
async function openSource(config: StorageConfig): Promise<Physical> {
  if (config.type === 'embedded' && !existsSync(String(config.options.path))) {
    throw new Error(`storage_source (${describeStore(config)}): there is no such data directory`);
  }
  const source = await openStore('storage_source', config);
  if ((await source.list('')).length === 0) {
    await source.close();
    throw new Error(`storage_source (${describeStore(config)}) holds no data: nothing to migrate`);
  }
  return source;
}

async function migrate(io: CliIO, config: MigrationConfig, start: string | undefined): Promise<number> {
  const source = await openSource(config.source);
  // Ctrl-C stops after the batch under way, so the destination records where to resume; a second one ends the process.
  const interrupt = new AbortController();
  const stop = () => interrupt.abort();
  try {
    const destination = await openStore('storage_destination', config.destination);
    process.once('SIGINT', stop).once('SIGTERM', stop);
    try {
      const result = await migrateStorage(source, destination, { start, signal: interrupt.signal, onProgress: (progress) => println(io.stdout, progressLine(progress)) });
      println(
        io.stdout,
        `Success! Migrated ${result.entries} entries${start === undefined ? '' : ` from key ${JSON.stringify(start)} on`}, ` +
          `${result.metadata} replication metadata records and ${result.logEntries} log entries (last log index ${result.log.lastIndex}, ` +
          `logging ${result.log.logging ? 'on' : 'off'}) from ${describeStore(config.source)} to ${describeStore(config.destination)}.`,
      );
      return 0;
    } catch (err) {
      if (!(err instanceof MigrationStopped)) throw err;
      println(io.stderr, `Error: ${err.message}`);
      println(io.stderr, `The migration stopped after copying ${err.copied} entries; to resume it, ${resumeHint(err.resumeFrom)}.`);
      return 1;
    } finally {
      process.off('SIGINT', stop).off('SIGTERM', stop);
      await destination.close();
    }
  } finally {
    await source.close();
  }
}
