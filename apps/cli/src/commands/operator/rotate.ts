import type { Command } from '../context';
import { printKeyTerm } from './key-term';

export const command: Command = {
  args: '',
  summary: 'Add a new encryption key term to the barrier: new writes use it, older data stays readable.',
  flags: {},
  async run(ctx) {
    await ctx.client.write('sys/rotate');
    return printKeyTerm(ctx, 'Success! Rotated key');
  },
};
