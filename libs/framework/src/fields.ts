import { ServiceError } from '@svc/http';
import { coerceValue, InvalidValue } from './coerce';
import { describeValue } from './describe';
import type { FieldData, FieldMap, FieldSchema } from './types';

export { parseDuration } from './duration';

export interface FieldDataOptions {
  /** Report absent `required` fields (the backend does so for create and update only). */
  enforceRequired?: boolean;
}

/**
 * Coerces and validates every declared field at once, so a handler never sees a half-valid request.
 * Path parameters take precedence over body fields of the same name. `null` counts as absent.
 * All problems are reported together in one 400.
 */
export function createFieldData(
  schema: FieldMap,
  raw: Record<string, unknown>,
  params: Record<string, string> = {},
  options: FieldDataOptions = {},
): FieldData {
  const values = new Map<string, unknown>();
  const sent = new Set<string>();
  const errors: string[] = [];

  for (const [name, field] of Object.entries(schema)) {
    const input = Object.hasOwn(params, name) ? params[name] : Object.hasOwn(raw, name) ? raw[name] : undefined;
    if (input === undefined || input === null) {
      if (field.required && (options.enforceRequired ?? true)) errors.push(`missing required field "${name}"`);
      else if (field.default !== undefined) values.set(name, coerceDefault(name, field));
      continue;
    }
    try {
      values.set(name, coerceValue(field, input));
      sent.add(name);
    } catch (err) {
      if (!(err instanceof InvalidValue)) throw err;
      errors.push(`field "${name}": ${field.sensitive ? 'value' : describeValue(input)} ${err.reason}`);
    }
  }
  if (errors.length > 0) throw new ServiceError(400, errors);

  const declared = (name: string): void => {
    // Asking for an undeclared field is a bug in the handler, not bad input.
    if (!Object.hasOwn(schema, name)) throw new Error(`field "${name}" is not declared on this path`);
  };
  return {
    get<T = unknown>(name: string): T {
      declared(name);
      return values.get(name) as T;
    },
    has(name: string): boolean {
      declared(name);
      return sent.has(name);
    },
    raw,
    params,
  };
}

function coerceDefault(name: string, field: FieldSchema): unknown {
  try {
    return coerceValue(field, field.default);
  } catch (err) {
    if (err instanceof InvalidValue) throw new Error(`default of field "${name}" ${err.reason}`);
    throw err;
  }
}

/** Names the client sent that are neither declared fields nor path parameters, sorted. */
export function unknownFields(
  schema: FieldMap,
  raw: Record<string, unknown>,
  params: Record<string, string>,
): string[] {
  return Object.keys(raw)
    .filter((name) => !Object.hasOwn(schema, name) && !Object.hasOwn(params, name))
    .sort();
}

export function unknownFieldsWarning(names: string[]): string {
  return `Endpoint ignored these unrecognized parameters: [${names.join(' ')}]`;
}
