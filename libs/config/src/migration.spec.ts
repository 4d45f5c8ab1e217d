import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadMigrationConfigFile, parseMigrationConfig } from './index';

const SOURCE = 'storage_source "postgresql" {\n  connection_url = "postgres://svc:pw@db:5432/svc"\n  table = "svc_store"\n}\n';
const DESTINATION = 'storage_destination "embedded" {\n  path = "/var/lib/svc"\n}\n';

async function refused(text: string, format: 'hcl' | 'json' = 'hcl'): Promise<string> {
  const error = await parseMigrationConfig(text, format, 'migrate.hcl').then(() => undefined, (err: unknown) => err);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as Error).message;
}

describe('migration configuration', () => {
  it('reads a source and a destination as the server reads its storage stanza', async () => {
    expect(await parseMigrationConfig(SOURCE + DESTINATION, 'hcl', 'migrate.hcl')).toEqual({
      source: { type: 'postgresql', options: { connection_url: 'postgres://svc:pw@db:5432/svc', table: 'svc_store' } },
      destination: { type: 'embedded', options: { path: '/var/lib/svc' } },
    });
    const json = JSON.stringify({ storage_source: { embedded: { path: '/a' } }, storage_destination: { postgresql: { connection_url: 'postgres://db/svc', max_connections: 4 } } });
    expect(await parseMigrationConfig(json, 'json', 'migrate.json')).toEqual({
      source: { type: 'embedded', options: { path: '/a' } },
      destination: { type: 'postgresql', options: { connection_url: 'postgres://db/svc', max_connections: 4 } },
    });
  });

  it('requires both stanzas, one of each', async () => {
    expect(await refused(SOURCE)).toBe('migrate.hcl: a storage_destination stanza is required, e.g. storage_destination "postgresql" { connection_url = "postgres://..." }');
    expect(await refused(DESTINATION)).toMatch(/^migrate.hcl: a storage_source stanza is required/);
    expect(await refused(SOURCE + DESTINATION + DESTINATION)).toBe('migrate.hcl: only one storage_destination stanza is allowed (found "embedded", "embedded")');
  });

  it('names unknown stanzas, unknown options and unsupported types, never a value', async () => {
    expect(await refused(`${SOURCE}${DESTINATION}storage "inmem" {}\nlistener "tcp" {}\n`)).toBe(
      'migrate.hcl: unknown stanzas "listener", "storage" (expected: "storage_source", "storage_destination")',
    );
    const withOption = SOURCE.replace('table =', 'pasword = "hunter2"\n  table =');
    const message = await refused(withOption + DESTINATION);
    expect(message).toBe('migrate.hcl: storage_source "postgresql": unknown field "pasword" (expected: "connection_url", "table", "max_connections")');
    expect(await refused(`${SOURCE}storage_destination "mysql" { address = "db" }\n`)).toBe('migrate.hcl: unsupported storage_destination type "mysql" (supported: postgresql, embedded)');
    expect(await refused(`${SOURCE}storage_destination "embedded" {}\n`)).toBe('migrate.hcl: storage_destination "embedded": path is required');
  });

  it('refuses in-memory storage, which keeps nothing to migrate', async () => {
    expect(await refused(`storage_source "inmem" {}\n${DESTINATION}`)).toBe(
      'migrate.hcl: storage_source "inmem": in-memory storage keeps nothing once its server stops, so there is nothing to migrate; use postgresql or embedded',
    );
  });

  it('reads a file, choosing the format by its extension', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-migrate-config-'));
    try {
      await writeFile(join(dir, 'migrate.hcl'), SOURCE + DESTINATION);
      expect((await loadMigrationConfigFile(join(dir, 'migrate.hcl'))).destination.type).toBe('embedded');
      await expect(loadMigrationConfigFile(join(dir, 'missing.hcl'))).rejects.toThrow(`${join(dir, 'missing.hcl')}: cannot read configuration file (ENOENT)`);
      await expect(loadMigrationConfigFile(join(dir, 'migrate.txt'))).rejects.toThrow('configuration files must end in .hcl or .json');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
