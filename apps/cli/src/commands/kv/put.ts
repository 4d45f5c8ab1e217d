import type { Command } from '../context';
import { writeKv } from './write-kv';
import { MOUNT_FLAG } from './kv-path';

export const command: Command = {
  args: 'PATH [-|K=V...]',
  summary: 'Write a secret to a kv engine: a new version on version 2 (K=V, K=@FILE, K=-, or - for JSON).',
  flags: { ...MOUNT_FLAG, cas: { kind: 'int', description: 'write only if the current version is this (0: only if none exists); version 2' } },
  run: (ctx, args) => writeKv(ctx, args, 'put'),
};
