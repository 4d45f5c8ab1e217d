import type { FieldData, FieldMap, Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { isJsonObject } from '../json';

export const VERSION_FIELD: FieldMap = {
  version: { type: 'int', default: 0, description: 'Version to read; 0 or absent means the latest.' },
};

/** The `version` a read asks for; 0 means the latest. */
export function requestedVersion(fields: FieldData): number {
  const version = fields.get<number>('version');
  if (version < 0) throw ServiceError.badRequest('field "version" must be a non-negative integer');
  return version;
}

/** `options.cas` of a data write, when given: the version the writer expects to replace. */
export function casOption(fields: FieldData): number | undefined {
  const options = fields.get<Record<string, unknown> | undefined>('options');
  const cas = options?.cas;
  if (cas === undefined || cas === null) return undefined;
  const value = typeof cas === 'string' && /^\d+$/.test(cas) ? Number(cas) : cas;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw ServiceError.badRequest('field "options.cas" must be a non-negative integer');
  }
  return value;
}

/** PATCH bodies are JSON merge patches; Vault refuses any other content type with 415. */
export function requireMergePatch(req: Request): void {
  const mediaType = req.contentType?.split(';')[0].trim().toLowerCase();
  if (mediaType !== 'application/merge-patch+json') {
    throw ServiceError.unsupportedMediaType('PATCH requires Content-Type "application/merge-patch+json"');
  }
}

/** A map field the request must carry as a JSON object (the framework already refused other types). */
export function requiredMap(fields: FieldData, name: string): Record<string, unknown> {
  const value = fields.get<unknown>(name);
  if (!isJsonObject(value)) throw ServiceError.badRequest(`missing required field "${name}"`);
  return value;
}
