import { keyValuePairs } from '../data';
import type { Command } from '../context';
import { println } from '../context';
import { apiPath, MOUNT_FLAG, onlyKvPath, requireV2 } from './kv-path';

/** `kv metadata put` (sets the settings given, the others to their defaults) and `kv metadata patch` (only those given). */
export function metadataWriteCommand(verb: 'put' | 'patch'): Command {
  return {
    args: 'PATH',
    summary: verb === 'put' ? 'Write the settings of a version 2 secret: max versions, check-and-set, expiry, custom metadata.' : 'Change only the given settings of a version 2 secret.',
    flags: {
      ...MOUNT_FLAG,
      'max-versions': { kind: 'int', description: 'versions to keep (0: the engine setting)' },
      'cas-required': { kind: 'boolean', description: 'every write must give -cas' },
      'delete-version-after': { kind: 'string', description: 'delete each version this long after it is written, e.g. 72h (0s: never)' },
      'custom-metadata': { kind: 'list', description: 'K=V custom metadata; may be repeated' },
    },
    async run(ctx, args) {
      const kv = await onlyKvPath(ctx, args, `kv metadata ${verb}`);
      requireV2(kv, `kv metadata ${verb}`);
      const { flags } = args;
      const body: Record<string, unknown> = {};
      if (flags['max-versions'] !== undefined) body.max_versions = flags['max-versions'];
      if (flags['cas-required'] !== undefined) body.cas_required = flags['cas-required'];
      if (flags['delete-version-after'] !== undefined) body.delete_version_after = flags['delete-version-after'];
      if (flags['custom-metadata'] !== undefined) {
        body.custom_metadata = keyValuePairs(flags['custom-metadata'] as string[], 'custom-metadata');
      }
      const path = apiPath(kv, 'metadata');
      await (verb === 'put' ? ctx.client.write(path, body) : ctx.client.patch(path, body));
      println(ctx.io.stdout, `Success! Data written to: ${path}`);
      return 0;
    },
  };
}
