import { ServiceError } from '@svc/api-contract';
import { coerceValue, InvalidValue } from './coerce';
import { describeValue } from './describe';
import type { FieldData, FieldMap, FieldSchema } from './types';

export { parseDuration } from './duration';

export interface FieldDataOptions {
  /** Report absent `required` fields (the backend does so for create and update only). */
  enforceRequired?: boolean;
}

/** A declared field, with its default coerced once (a bad default is a declaration bug). */
interface CompiledField {
  name: string;
  field: FieldSchema;
  /** Position in the schema: problems are reported in declaration order. */
  index: number;
  coercedDefault: unknown;
}

interface CompiledSchema {
  byName: Map<string, CompiledField>;
  required: CompiledField[];
}

const compiledSchemas = new WeakMap<FieldMap, CompiledSchema>();

function compile(schema: FieldMap): CompiledSchema {
  let compiled = compiledSchemas.get(schema);
  if (!compiled) {
    const fields = Object.entries(schema).map(([name, field], index) => ({
      name,
      field,
      index,
      coercedDefault: field.default === undefined ? undefined : coerceDefault(name, field),
    }));
    compiled = { byName: new Map(fields.map((f) => [f.name, f])), required: fields.filter((f) => f.field.required) };
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
  /** Copies of the mutable defaults (lists, maps) of fields the client did not send, made when first asked for. */
  private defaults?: Map<string, unknown>;

  constructor(
    private readonly schema: CompiledSchema,
    /** The fields the client sent, coerced. */
    private readonly values: Map<string, unknown>,
    readonly raw: Record<string, unknown>,
    readonly params: Record<string, string>,
  ) {}

  get<T = unknown>(name: string): T {
    const compiled = this.declared(name);
    const value = compiled.coercedDefault;
    if (this.values.has(name) || value === undefined) return this.values.get(name) as T;
    if (value === null || typeof value !== 'object') return value as T;
    this.defaults ??= new Map();
    if (!this.defaults.has(name)) this.defaults.set(name, defaultValue(compiled));
    return this.defaults.get(name) as T;
  }

  has(name: string): boolean {
    this.declared(name);
    return this.values.has(name);
  }

  sentDeclared(name: string): boolean {
    return this.schema.byName.has(name) && this.values.has(name);
  }

  /** Asking for an undeclared field is a bug in the handler, not bad input. */
  private declared(name: string): CompiledField {
    const compiled = this.schema.byName.get(name);
    if (!compiled) throw new Error(`field "${name}" is not declared on this path`);
    return compiled;
  }
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * Coerces and validates every field the client sent at once, so a handler never sees a half-valid
 * request; only sent fields are visited (a schema may declare dozens). Path parameters take
 * precedence over body fields of the same name. `null` counts as absent. All problems are reported
 * together in one 400, in declaration order.
 */
export function createFieldData(
  schema: FieldMap,
  raw: Record<string, unknown>,
  params: Record<string, string> = NO_PARAMS,
  options: FieldDataOptions = {},
): FieldData {
  const compiled = compile(schema);
  const values = new Map<string, unknown>();
  const enforceRequired = options.enforceRequired ?? true;
  /** Fields given a value, valid or not: an invalid required field is reported once, as invalid. */
  const given = enforceRequired && compiled.required.length > 0 ? new Set<string>() : undefined;
  let problems: { index: number; message: string }[] | undefined;

  const take = (name: string, input: unknown) => {
    const declared = compiled.byName.get(name);
    if (!declared || input === undefined || input === null) return;
    given?.add(name);
    try {
      values.set(name, coerceValue(declared.field, input));
    } catch (err) {
      if (!(err instanceof InvalidValue)) throw err;
      const message = `field "${name}": ${declared.field.sensitive ? 'value' : describeValue(input)} ${err.reason}`;
      (problems ??= []).push({ index: declared.index, message });
    }
  };
  for (const name in params) if (Object.hasOwn(params, name)) take(name, params[name]);
  for (const name in raw) if (Object.hasOwn(raw, name) && !Object.hasOwn(params, name)) take(name, raw[name]);
  if (given) {
    for (const field of compiled.required) {
      if (!given.has(field.name)) (problems ??= []).push({ index: field.index, message: `missing required field "${field.name}"` });
    }
  }
  if (problems) throw new ServiceError('bad-request', problems.sort((a, b) => a.index - b.index).map((p) => p.message));
  return new CoercedFields(compiled, values, raw, params);
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
