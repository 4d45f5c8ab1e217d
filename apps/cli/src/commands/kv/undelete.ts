import { versionsCommand } from './versions-command';

export const command = versionsCommand('undelete', 'Restore deleted versions of a version 2 secret.');
