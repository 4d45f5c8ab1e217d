import { ConfigError } from './errors';
import { isObject, RawObject } from './section';

/** One labeled stanza, e.g. `listener "tcp" { ... }` -> { type: 'tcp', body }. */
export interface Block {
  type: string;
  body: RawObject;
}

/**
 * The objects of a map or block value: a plain object (JSON), or a list of objects (HCL v1 wraps
 * every object in one, and a repeated block or a Vault-style JSON array holds several).
 * Undefined when the value is anything else.
 */
export function objectsOf(value: unknown): RawObject[] | undefined {
  const items: unknown[] = Array.isArray(value) ? value : [value];
  return items.every(isObject) ? items : undefined;
}

/**
 * The blocks of one top-level stanza, in file order. Accepts every shape that HCL v1 and
 * Vault-style JSON produce: `{tcp: {...}}`, `{tcp: [{...}, ...]}` and `[{tcp: [{...}]}, ...]`.
 */
export function blocksOf(stanza: string, value: unknown, sourceName: string): Block[] {
  if (value === undefined) return [];
  const objects = (candidate: unknown): RawObject[] => {
    const found = objectsOf(candidate);
    if (!found) throw new ConfigError(`${sourceName}: ${stanza} must be a block such as ${stanza} "TYPE" { ... }`);
    return found;
  };
  return objects(value).flatMap((group) =>
    Object.entries(group).flatMap(([type, bodies]) => objects(bodies).map((body) => ({ type, body }))),
  );
}
