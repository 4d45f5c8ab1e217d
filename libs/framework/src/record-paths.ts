import { listPath } from './responses';
import type { FieldData, FieldMap, PathDeclaration, Response } from './types';

/** A named collection of records under `<collection>/` (an auth method's roles, say). */
export interface RecordPathsOptions<T> {
  /** The collection's path segment, e.g. "role": `role/` lists, `role/:<param>` is one record. */
  collection: string;
  /** The path parameter naming a record, e.g. "name". */
  param: string;
  /** Other paths that list the collection (Vault's older names, "roles/"). */
  listAliases?: string[];
  synopsis: string;
  description?: string;
  fields: FieldMap;
  /** The record's name in the request (lower-cased where names are case-insensitive). */
  name(f: FieldData): string;
  get(name: string): Promise<T | null>;
  names(): Promise<string[]>;
  remove(name: string): Promise<void>;
  /** What a read shows of a record. */
  shown(record: T): Record<string, unknown>;
  /** Creates (`existing` null) or updates the record from the request. */
  write(f: FieldData, existing: T | null): Promise<Response | undefined>;
}

/** LIST `<collection>/` and create, read, update, delete `<collection>/:<param>`. */
export function recordPaths<T>(options: RecordPathsOptions<T>): PathDeclaration[] {
  const { collection, name } = options;
  const list = listPath({ pattern: `${collection}/`, synopsis: `Lists the ${collection}s.`, summary: `List the ${collection}s.`, names: options.names });
  return [
    options.listAliases ? { ...list, aliases: options.listAliases } : list,
    {
      pattern: `${collection}/:${options.param}`,
      synopsis: options.synopsis,
      description: options.description,
      fields: options.fields,
      existenceCheck: async (_req, f) => (await options.get(name(f))) !== null,
      operations: {
        read: {
          summary: `Read a ${collection}.`,
          handler: async (_req, f) => {
            const record = await options.get(name(f));
            return record ? { data: options.shown(record) } : undefined;
          },
        },
        create: { summary: `Create a ${collection}.`, handler: (_req, f) => options.write(f, null) },
        update: { summary: `Update a ${collection} (fields not sent stay).`, handler: async (_req, f) => options.write(f, await options.get(name(f))) },
        delete: {
          summary: `Delete a ${collection}.`,
          handler: async (_req, f) => {
            await options.remove(name(f));
            return undefined;
          },
        },
      },
    },
  ];
}
