import { metadataWriteCommand } from './metadata-write';

export const command = metadataWriteCommand('put');
