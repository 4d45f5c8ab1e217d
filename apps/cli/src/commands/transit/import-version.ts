import { importCommand } from './import-key';

export const command = importCommand(
  'import_version',
  'Import key material (base64) as a new version of an imported transit key, wrapped with the mount\'s wrapping key.',
);
