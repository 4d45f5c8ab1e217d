import type { Command } from '../context';
import { keyValuePairs } from '../data';
import { printSecret } from '../format';
import { UsageError } from '../args';

export const command: Command = {
  args: '',
  summary: 'Create a token, a child of the calling one unless -orphan; prints it with what it grants.',
  flags: {
    policy: { kind: 'list', description: 'policy of the token; may be repeated (default: those of the calling token)' },
    ttl: { kind: 'string', description: 'initial TTL, e.g. 1h' },
    'explicit-max-ttl': { kind: 'string', description: 'hard limit on the TTL, renewals included' },
    period: { kind: 'string', description: 'periodic token: each renewal resets the TTL to this' },
    renewable: { kind: 'boolean', description: 'whether the token can be renewed (default true)' },
    orphan: { kind: 'boolean', description: 'no parent: not revoked with the calling token' },
    'no-default-policy': { kind: 'boolean', description: 'leave out the default policy' },
    'display-name': { kind: 'string', description: 'name shown for the token' },
    metadata: { kind: 'list', description: 'K=V metadata; may be repeated' },
    'use-limit': { kind: 'int', description: 'number of uses (0: unlimited)' },
    role: { kind: 'string', description: 'create against this token role' },
    type: { kind: 'string', description: 'service or batch' },
    id: { kind: 'string', description: 'the token value itself (root only; default random)' },
    'entity-alias': { kind: 'string', description: 'entity alias to tie the token to (with -role)' },
  },
  async run(ctx, { flags, positionals }) {
    if (positionals.length > 0) throw new UsageError('token create takes no arguments, only flags');
    const body: Record<string, unknown> = {
      ...(flags.policy !== undefined && { policies: flags.policy }),
      ...(flags.ttl !== undefined && { ttl: flags.ttl }),
      ...(flags['explicit-max-ttl'] !== undefined && { explicit_max_ttl: flags['explicit-max-ttl'] }),
      ...(flags.period !== undefined && { period: flags.period }),
      ...(flags.renewable !== undefined && { renewable: flags.renewable }),
      ...(flags.orphan !== undefined && { no_parent: flags.orphan }),
      ...(flags['no-default-policy'] !== undefined && { no_default_policy: flags['no-default-policy'] }),
      ...(flags['display-name'] !== undefined && { display_name: flags['display-name'] }),
      ...(flags.metadata !== undefined && { meta: keyValuePairs(flags.metadata as string[], 'metadata') }),
      ...(flags['use-limit'] !== undefined && { num_uses: flags['use-limit'] }),
      ...(flags.type !== undefined && { type: flags.type }),
      ...(flags.id !== undefined && { id: flags.id }),
      ...(flags['entity-alias'] !== undefined && { entity_alias: flags['entity-alias'] }),
    };
    const path = flags.role === undefined ? 'auth/token/create' : `auth/token/create/${String(flags.role)}`;
    const secret = await ctx.client.write(path, body);
    if (!secret) throw new Error(`${path} answered without a token`);
    printSecret(ctx, secret, 'Success! The token was created.');
    return 0;
  },
};
