import { DEFAULT_JSON_LIMITS } from '@svc/config';
import { exceededJsonLimit } from './json-limits';

const limits = { maxDepth: 3, maxStringValueLength: 8, maxObjectEntryCount: 3, maxArrayElementCount: 4 };
const check = (json: string) => exceededJsonLimit(Buffer.from(json), limits);
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('exceededJsonLimit', () => {
  it('accepts JSON at every limit', () => {
    expect(check('{"a":{"b":[1,2,3,"12345678"]},"c":"x","d":{}}')).toBeUndefined();
    expect(check(nested(3))).toBeUndefined();
  });

  it('names the depth limit for nesting one deeper, objects and arrays alike', () => {
    expect(check(nested(4))).toMatch(/max_json_depth \(3\)/);
    expect(check('{"a":[[["too deep"]]]}')).toMatch(/max_json_depth/);
  });

  it('names the string, object and array limits', () => {
    expect(check('{"a":"123456789", "padding": "is here"}')).toMatch(/max_json_string_value_length \(8 bytes\)/);
    expect(check('{"a":1,"b":2,"c":3,"d":4}')).toMatch(/max_json_object_entry_count \(3\)/);
    expect(check('{"a":[1,2,3,4,5]}')).toMatch(/max_json_array_element_count \(4\)/);
  });

  it('looks past structure inside strings, escaped quotes included', () => {
    expect(check('{"a":"[[[[,,,,"}')).toBeUndefined();
    expect(check('{"a":"\\"{{{{\\\\","b":"\\"[[[["}')).toBeUndefined();
    expect(check('{"a":"1234\\"5678"}')).toMatch(/max_json_string_value_length/);
  });

  it('counts entries per container, not across them', () => {
    expect(check('[[1,2,3],[4,5,6],[7,8,9]]')).toBeUndefined();
    expect(check('{"a":{"x":1,"y":2},"b":{"x":1,"y":2},"c":[1,2]}')).toBeUndefined();
  });

  it("with Vault's defaults, 10,000 levels are refused and large flat values pass", () => {
    expect(exceededJsonLimit(Buffer.from(nested(10_000)), DEFAULT_JSON_LIMITS)).toMatch(/max_json_depth \(500\)/);
    const many = JSON.stringify(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 'v'.repeat(100)])));
    expect(exceededJsonLimit(Buffer.from(many), DEFAULT_JSON_LIMITS)).toBeUndefined();
  });

  it('leaves malformed JSON to the parser', () => {
    expect(check('{"a":"unterminated')).toBeUndefined();
    expect(check(']]]]]]]]]]]]]]]]]]]]')).toBeUndefined();
  });
});
