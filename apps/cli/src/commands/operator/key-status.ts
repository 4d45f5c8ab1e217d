import type { Command } from '../context';
import { printKeyTerm } from './key-term';

export const command: Command = {
  args: '',
  summary: 'Show the active encryption key term of the barrier and when it was installed.',
  flags: {},
  run: (ctx) => printKeyTerm(ctx),
};
