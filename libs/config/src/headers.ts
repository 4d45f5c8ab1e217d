import type { CustomResponseHeaders } from './types';
import { objectsOf } from './blocks';
import { Section } from './section';

const STATUS_CODE = /^[1-5]\d\d$/;
const STATUS_CLASS = /^[1-5]xx$/;
// RFC 9110 token characters.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORBIDDEN_IN_VALUE = /[\r\n\0]/;
const RESERVED_PREFIX = 'x-service-';

/**
 * `custom_response_headers`: selector ("default", an exact status 100-599, or a class "1xx".."5xx")
 * -> header name -> list of values. Either map may arrive as a list of maps (HCL v1, repeated
 * blocks); they are merged in order.
 */
export function parseCustomResponseHeaders(section: Section, key: string): CustomResponseHeaders {
  const raw = section.raw(key);
  if (raw === undefined) return {};
  const maps = objectsOf(raw);
  if (!maps) throw section.error(`${key} must be a map of selector to headers`);
  const result: CustomResponseHeaders = {};
  for (const map of maps) {
    for (const [rawSelector, headers] of Object.entries(map)) {
      const selector = rawSelector.toLowerCase();
      if (selector !== 'default' && !STATUS_CODE.test(selector) && !STATUS_CLASS.test(selector)) {
        throw section.error(
          `${key}: invalid selector "${rawSelector}" (use "default", a status code 100-599 or a class such as "2xx")`,
        );
      }
      result[selector] = { ...result[selector], ...parseHeaderMap(section, `${key} "${rawSelector}"`, headers) };
    }
  }
  return result;
}

function parseHeaderMap(section: Section, where: string, headers: unknown): Record<string, string[]> {
  const maps = objectsOf(headers);
  if (!maps) throw section.error(`${where} must be a map of header name to list of values`);
  const result: Record<string, string[]> = {};
  for (const [name, values] of maps.flatMap((map) => Object.entries(map))) {
    if (!HEADER_NAME.test(name)) throw section.error(`${where}: "${name}" is not a valid header name`);
    if (name.toLowerCase().startsWith(RESERVED_PREFIX)) {
      throw section.error(`${where}: header "${name}" is reserved by the service`);
    }
    if (!Array.isArray(values) || !values.every((value) => typeof value === 'string')) {
      throw section.error(`${where}: header "${name}" must be a list of strings`);
    }
    if (values.some((value) => FORBIDDEN_IN_VALUE.test(value))) {
      throw section.error(`${where}: header "${name}" has a value containing a line break`);
    }
    result[name] = values;
  }
  return result;
}
