import type { Command } from '../context';
import { println } from '../context';
import { keyValuePairs } from '../data';
import { UsageError } from '../args';

export const command: Command = {
  args: 'TYPE [K=V...]',
  summary: 'Enable an audit device of TYPE (file) at PATH (default: the type); K=V are its options, e.g. file_path=/var/log/svc/audit.log.',
  flags: {
    path: { kind: 'string', description: 'where to enable it (default: the type)' },
    description: { kind: 'string', description: 'human-friendly description' },
    local: { kind: 'boolean', description: 'local to this cluster: not replicated' },
  },
  async run(ctx, { flags, positionals }) {
    const [type, ...pairs] = positionals;
    if (!type) throw new UsageError('audit enable needs a TYPE argument');
    const path = String(flags.path ?? type).replace(/^\/+|\/+$/g, '');
    await ctx.client.write(`sys/audit/${path}`, {
      type,
      description: flags.description ?? '',
      local: Boolean(flags.local),
      options: keyValuePairs(pairs, 'options (K=V arguments)'),
    });
    println(ctx.io.stdout, `Success! Enabled the ${type} audit device at: ${path}/`);
    return 0;
  },
};
