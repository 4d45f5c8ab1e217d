import { enableCommand } from '../mounts';

export const command = enableCommand('auth');
