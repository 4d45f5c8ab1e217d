import { tuneCommand } from '../mounts';

export const command = tuneCommand('auth');
