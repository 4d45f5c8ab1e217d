import { listCommand } from '../mounts';

export const command = listCommand('secrets');
