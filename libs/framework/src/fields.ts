import { ServiceError } from '@svc/http';
import { coerceValue, InvalidValue } from './coerce';
import { describeValue } from './describe';
import type { FieldData, FieldMap, FieldSchema } from './types';

export { parseDuration } from './duration';

export interface FieldDataOptions {
  /** Report absent `required` fields (the backend does so for create and update only). */
  enforceRequired?: boolean;
}

/** A schema's fields as a list, with their defaults coerced once (a bad default is a declaration bug). */
interface CompiledField {
  name: string;
  field: FieldSchema;
  coercedDefault: unknown;
}

const compiledSchemas = new WeakMap<FieldMap, CompiledField[]>();

function compile(schema: FieldMap): CompiledField[] {
  let compiled = compiledSchemas.get(schema);
  if (!compiled) {
    compiled = Object.entries(schema).map(([name, field]) => ({
      name,
      field,
      coercedDefault: field.default === undefined ? undefined : coerceDefault(name, field),
    }));
    compiledSchemas.set(schema, compiled);
  }
  return compiled;
}

/** Mutable defaults (lists, maps) are copied per request so a handler cannot change the schema's. */
function defaultValue(compiled: CompiledField): unknown {
  const value = compiled.coercedDefault;
  if (Array.isArray(value)) return [...(value as unknown[])];
  if (value !== null && typeof value === 'object') return { ...value };
  return value;
}

class CoercedFields implements FieldData {
  constructor(
    private readonly schema: FieldMap,
    private readonly values: Map<string, unknown>,
    private readonly sent: Set<string>,
    readonly raw: Record<string, unknown>,
    readonly params: Record<string, string>,
  ) {}

  get<T = unknown>(name: string): T {
    this.declared(name);
    return this.values.get(name) as T;
  }

  has(name: string): boolean {
    this.declared(name);
    return this.sent.has(name);
  }

  /** Asking for an undeclared field is a bug in the handler, not bad input. */
  private declared(name: string): void {
    if (!Object.hasOwn(this.schema, name)) throw new Error(`field "${name}" is not declared on this path`);
  }
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * Coerces and validates every declared field at once, so a handler never sees a half-valid request.
 * Path parameters take precedence over body fields of the same name. `null` counts as absent.
 * All problems are reported together in one 400.
 */
export function createFieldData(
  schema: FieldMap,
  raw: Record<string, unknown>,
  params: Record<string, string> = NO_PARAMS,
  options: FieldDataOptions = {},
): FieldData {
  const values = new Map<string, unknown>();
  const sent = new Set<string>();
  let errors: string[] | undefined;
  const enforceRequired = options.enforceRequired ?? true;

  for (const compiled of compile(schema)) {
    const { name, field } = compiled;
    const input = Object.hasOwn(params, name) ? params[name] : Object.hasOwn(raw, name) ? raw[name] : undefined;
    if (input === undefined || input === null) {
      if (field.required && enforceRequired) (errors ??= []).push(`missing required field "${name}"`);
      else if (compiled.coercedDefault !== undefined) values.set(name, defaultValue(compiled));
      continue;
    }
    try {
      values.set(name, coerceValue(field, input));
      sent.add(name);
    } catch (err) {
      if (!(err instanceof InvalidValue)) throw err;
      (errors ??= []).push(`field "${name}": ${field.sensitive ? 'value' : describeValue(input)} ${err.reason}`);
    }
  }
  if (errors) throw new ServiceError(400, errors);
  return new CoercedFields(schema, values, sent, raw, params);
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
  const unknown: string[] = [];
  for (const name in raw) {
    if (Object.hasOwn(raw, name) && !Object.hasOwn(schema, name) && !Object.hasOwn(params, name)) unknown.push(name);
  }
  return unknown.sort();
}

export function unknownFieldsWarning(names: string[]): string {
  return `Endpoint ignored these unrecognized parameters: [${names.join(' ')}]`;
}
