import { versionsCommand } from './versions-command';

export const command = versionsCommand('destroy', 'Remove versions of a version 2 secret for good: their data cannot be restored.');
