import { importCommand } from './import-key';

export const command = importCommand(
  'import',
  'Import key material (base64) into a new transit key, wrapped with the mount\'s wrapping key; K=V options go to the import endpoint.',
);
