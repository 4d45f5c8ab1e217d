import { createPhysical } from './factory';
import type { StorageConfig } from './types';

const URL = 'postgres://postgres@127.0.0.1:5432/test';

function configError(config: StorageConfig): string {
  try {
    createPhysical(config);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected createPhysical to reject the configuration');
}

describe('createPhysical', () => {
  it('builds each backend from its options', () => {
    expect(createPhysical({ type: 'inmem', options: {} }).kind).toBe('inmem');
    expect(createPhysical({ type: 'embedded', options: { path: '/tmp/svc-data' } }).kind).toBe('embedded');
    const postgres = createPhysical({
      type: 'postgresql',
      options: { connection_url: URL, table: 'vault_kv', max_connections: 4 },
    });
    expect(postgres.kind).toBe('postgresql');
  });

  it('names the problem in a bad configuration', () => {
    expect(configError({ type: 'mysql', options: {} } as unknown as StorageConfig)).toBe(
      'storage "mysql": unknown storage type; expected one of postgresql, embedded, inmem',
    );
    expect(configError({ type: 'postgresql', options: {} })).toBe('storage "postgresql": option connection_url is required');
    expect(configError({ type: 'postgresql', options: { connection_url: URL, conection_pool: 3 } })).toBe(
      'storage "postgresql": unknown option(s) conection_pool; expected connection_url, table, max_connections',
    );
    expect(configError({ type: 'postgresql', options: { connection_url: URL, max_connections: 0 } })).toBe(
      'storage "postgresql": option max_connections must be a positive integer',
    );
    expect(configError({ type: 'postgresql', options: { connection_url: URL, table: 'Bad-Name' } })).toMatch(
      /storage table "Bad-Name" is not a safe identifier/,
    );
    expect(configError({ type: 'embedded', options: {} })).toBe('storage "embedded": option path is required');
    expect(configError({ type: 'embedded', options: { path: 3 } })).toBe(
      'storage "embedded": option path must be a non-empty string',
    );
    expect(configError({ type: 'inmem', options: { path: '/x' } })).toBe(
      'storage "inmem": unknown option(s) path; it takes no options',
    );
  });

  it('never repeats a connection URL, which may hold a password', () => {
    const message = configError({ type: 'postgresql', options: { connection_url: 'mysql://admin:hunter2@db/prod' } });
    expect(message).toBe('storage "postgresql": option connection_url must start with postgres:// or postgresql://');
    expect(message).not.toContain('hunter2');
  });
});
