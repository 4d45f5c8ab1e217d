import { disableCommand } from '../mounts';

export const command = disableCommand('auth');
