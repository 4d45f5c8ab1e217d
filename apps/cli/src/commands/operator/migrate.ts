import type { LocalCommand } from '../context';

export const command: LocalCommand = {
  local: true,
  args: '',
  summary: 'Copy the whole storage into another backend, offline, as stored (storage_source and storage_destination in -config).',
  flags: {
    config: { kind: 'string', description: 'HCL or JSON file with a storage_source and a storage_destination stanza, postgresql or embedded (required)' },
    start: { kind: 'string', description: 'copy only the keys from this one on, to resume an interrupted migration where it says' },
    reset: { kind: 'boolean', description: 'remove the lock an interrupted migration left in the destination, and copy nothing' },
  },
  // Storage code is loaded only when the command runs, not when `svc -h` lists it.
  run: async (io, args) => (await import('./storage-migration')).runStorageMigration(io, args),
};
