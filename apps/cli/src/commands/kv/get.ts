import type { Command } from '../context';
import { printSecret } from '../format';
import { notFound } from '../paths';
import { apiPath, MOUNT_FLAG, onlyKvPath, printKvSecret } from './kv-path';

export const command: Command = {
  args: 'PATH',
  summary: 'Read a secret from a kv engine (version 1 or 2); -version reads an older version.',
  flags: { ...MOUNT_FLAG, version: { kind: 'int', description: 'version to read (kv version 2; default the latest)' } },
  async run(ctx, args) {
    const kv = await onlyKvPath(ctx, args, 'kv get');
    const path = apiPath(kv, 'data');
    const secret = await ctx.client.read(path, args.flags.version === undefined ? undefined : { version: Number(args.flags.version) });
    if (!secret) return notFound(ctx, path);
    if (secret.wrap_info) {
      printSecret(ctx, secret, '');
      return 0;
    }
    if (kv.version === 1) {
      printKvSecret(ctx, kv, secret, secret.data);
      return 0;
    }
    const { data, metadata } = (secret.data ?? {}) as { data?: Record<string, unknown> | null; metadata?: Record<string, unknown> };
    printKvSecret(ctx, kv, secret, data, metadata);
    // Vault: a deleted or destroyed version has metadata but no data, and the read "fails".
    return data ? 0 : 2;
  },
};
