import { UsageError, type ParsedArgs } from '../args';
import type { CommandContext } from '../context';
import { parseData } from '../data';
import { apiPath, kvPath, printKvWrite, requireV2 } from './kv-path';

/** `kv put` and `kv patch`: the data from the arguments, sent as a new version (or, on version 1, in place). */
export async function writeKv(ctx: CommandContext, { flags, positionals }: ParsedArgs, verb: 'put' | 'patch'): Promise<number> {
  const [given, ...pairs] = positionals;
  if (!given) throw new UsageError(`kv ${verb} needs a PATH argument`);
  const data = await parseData(pairs, ctx.io);
  if (Object.keys(data).length === 0) throw new UsageError(`kv ${verb} needs data: K=V pairs, or - for JSON on stdin`);
  const kv = await kvPath(ctx, flags, given);
  const path = apiPath(kv, 'data');
  if (verb === 'put' && kv.version === 1) {
    printKvWrite(ctx, kv, await ctx.client.write(path, data));
    return 0;
  }
  requireV2(kv, `kv ${verb}`);
  const options = flags.cas === undefined ? {} : { options: { cas: flags.cas } };
  if (verb === 'put') {
    printKvWrite(ctx, kv, await ctx.client.write(path, { data, ...options }));
  } else if ((flags.method ?? 'patch') === 'patch') {
    printKvWrite(ctx, kv, await ctx.client.patch(path, { data, ...options }));
  } else if (flags.method === 'rw') {
    const current = await ctx.client.read(path);
    const { data: existing, metadata } = (current?.data ?? {}) as { data?: Record<string, unknown>; metadata?: { version?: number } };
    if (!existing) throw new UsageError(`no secret at ${path} to patch`);
    printKvWrite(ctx, kv, await ctx.client.write(path, { data: { ...existing, ...data }, options: { cas: flags.cas ?? metadata?.version } }));
  } else {
    throw new UsageError('-method must be patch or rw');
  }
  return 0;
}
