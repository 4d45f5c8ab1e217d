import { disableCommand } from '../mounts';

export const command = disableCommand('secrets');
