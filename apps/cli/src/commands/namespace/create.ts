import type { Command } from '../context';
import { keyValuePairs } from '../data';
import { printSecret } from '../format';
import { onlyPath } from '../paths';

export const command: Command = {
  args: 'PATH',
  summary: 'Create a namespace at PATH, inside the current namespace (-namespace).',
  flags: { 'custom-metadata': { kind: 'list', description: 'K=V custom metadata; may be repeated' } },
  async run(ctx, { flags, positionals }) {
    const path = onlyPath('namespace create', positionals).replace(/^\/+|\/+$/g, '');
    const metadata = flags['custom-metadata'] === undefined ? {} : { custom_metadata: keyValuePairs(flags['custom-metadata'] as string[], 'custom-metadata') };
    const secret = await ctx.client.write(`sys/namespaces/${path}`, metadata);
    printSecret(ctx, secret, `Success! Namespace created at: ${path}/`);
    return 0;
  },
};
