import type { Command } from '../context';
import { writeKv } from './write-kv';
import { MOUNT_FLAG } from './kv-path';

export const command: Command = {
  args: 'PATH [-|K=V...]',
  summary: 'Change only the given keys of a version 2 secret (a new version with the others kept).',
  flags: {
    ...MOUNT_FLAG,
    cas: { kind: 'int', description: 'patch only if the current version is this' },
    method: { kind: 'string', description: 'patch (default: a PATCH request) or rw (read, merge here, then write with cas)' },
  },
  run: (ctx, args) => writeKv(ctx, args, 'patch'),
};
