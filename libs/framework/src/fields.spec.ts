import { ServiceError } from '@svc/api-contract';
import { createFieldData, durationMilliseconds, formatDuration, parseDuration, type FieldMap, type FieldSchema, type FieldType } from './index';

/** Coerces one value through a single field named "f". */
function coerce(type: FieldType, value: unknown, extra: Partial<FieldSchema> = {}): unknown {
  return createFieldData({ f: { type, description: 'test field', ...extra } }, { f: value }).get('f');
}

/** The 400 messages for one value, or a failure if it was accepted. */
function rejection(type: FieldType, value: unknown, extra: Partial<FieldSchema> = {}): string[] {
  try {
    coerce(type, value, extra);
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).kind).toBe('bad-request');
    return (err as ServiceError).errors;
  }
  throw new Error(`${JSON.stringify(value)} was accepted as ${type}`);
}

describe('parseDuration', () => {
  it.each([
    [0, 0],
    ['0', 0],
    [90, 90],
    ['90', 90],
    ['30s', 30],
    ['30m', 1800],
    ['24h', 86400],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['.5m', 30],
    ['2d', 172800],
    ['1d12h', 129600],
    ['1500ms', 1],
    ['500ms', 0],
    ['1m0.5s', 60],
    [' 45s ', 45],
  ])('parses %p as %p seconds', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  it.each([['abc'], ['-5s'], [-1], ['1.5'], [''], ['5x'], ['s'], ['.h'], ['1h 30m'], [null], [{}], [Number.NaN], [1e300]])(
    'rejects %p with a 400 naming the value',
    (input) => {
      expect(() => parseDuration(input)).toThrow(ServiceError);
      expect(() => parseDuration(input)).toThrow(`${JSON.stringify(input)} is not a valid duration`);
    },
  );
});

describe('durationMilliseconds', () => {
  it.each([
    [30, 30_000],
    [1.5, 1_500],
    ['30', 30_000],
    ['768h', 2_764_800_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1500us', 1],
    ['2d', 172_800_000],
  ])('%p -> %p ms', (input, ms) => expect(durationMilliseconds(input)).toBe(ms));

  it.each(['', 'h', '10x', '-5s', '1.5', true])('rejects %p', (input) => expect(durationMilliseconds(input)).toBeUndefined());
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [59, '59s'],
    [60, '1m0s'],
    [1800, '30m0s'],
    [12319, '3h25m19s'],
    [90000, '25h0m0s'],
    [768 * 3600, '768h0m0s'],
  ])('%p s -> %p', (seconds, text) => expect(formatDuration(seconds)).toBe(text));
});

describe('field coercion', () => {
  it('string: keeps strings, converts numbers and booleans, rejects objects', () => {
    expect(coerce('string', 'abc')).toBe('abc');
    expect(coerce('string', 42)).toBe('42');
    expect(coerce('string', true)).toBe('true');
    expect(rejection('string', { a: 1 })).toEqual(['field "f": {"a":1} is not a valid string']);
    expect(rejection('string', ['a'])).toEqual(['field "f": ["a"] is not a valid string']);
  });

  it('string: enforces allowed values', () => {
    expect(coerce('string', 'aes', { allowed: ['aes', 'rsa'] })).toBe('aes');
    expect(rejection('string', 'des', { allowed: ['aes', 'rsa'] })).toEqual(['field "f": "des" is not one of: aes, rsa']);
  });

  it('int: numbers and numeric strings that are integers', () => {
    expect(coerce('int', 7)).toBe(7);
    expect(coerce('int', '-12')).toBe(-12);
    expect(rejection('int', 1.5)).toEqual(['field "f": 1.5 is not a valid integer']);
    expect(rejection('int', '1.5')).toEqual(['field "f": "1.5" is not a valid integer']);
    expect(rejection('int', 'ten')).toEqual(['field "f": "ten" is not a valid integer']);
    expect(rejection('int', true)).toEqual(['field "f": true is not a valid integer']);
  });

  it('bool: booleans and the Go spellings', () => {
    for (const yes of [true, 'true', 'TRUE', '1', 't', 'T', 1]) expect(coerce('bool', yes)).toBe(true);
    for (const no of [false, 'false', 'False', '0', 'f', 0]) expect(coerce('bool', no)).toBe(false);
    expect(rejection('bool', 'yes')).toEqual(['field "f": "yes" is not a valid boolean']);
    expect(rejection('bool', 'tRuE')).toEqual(['field "f": "tRuE" is not a valid boolean']); // Go takes three spellings per case only
    expect(rejection('bool', 2)).toEqual(['field "f": 2 is not a valid boolean']);
  });

  it('duration: seconds or duration strings', () => {
    expect(coerce('duration', '1h')).toBe(3600);
    expect(coerce('duration', 60)).toBe(60);
    expect(rejection('duration', 'abc')).toEqual(['field "f": "abc" is not a valid duration']);
  });

  it('comma-string-list: arrays or comma-separated strings, trimmed, empties dropped', () => {
    expect(coerce('comma-string-list', 'a, b,,c ')).toEqual(['a', 'b', 'c']);
    expect(coerce('comma-string-list', [' x', 'y', ''])).toEqual(['x', 'y']);
    expect(coerce('comma-string-list', '')).toEqual([]);
    expect(rejection('comma-string-list', [{ a: 1 }])).toEqual(['field "f": [{"a":1}] is not a valid list of strings']);
    expect(rejection('comma-string-list', 'a,x', { allowed: ['a', 'b'] })).toEqual([
      'field "f": "a,x" is not one of: a, b',
    ]);
  });

  it('comma-int-list: arrays of ints or "1,2,3"', () => {
    expect(coerce('comma-int-list', '1, 2,3')).toEqual([1, 2, 3]);
    expect(coerce('comma-int-list', [4, '5'])).toEqual([4, 5]);
    expect(coerce('comma-int-list', 9)).toEqual([9]);
    expect(rejection('comma-int-list', '1,b')).toEqual(['field "f": "1,b" is not a valid list of integers']);
    expect(rejection('comma-int-list', [1.5])).toEqual(['field "f": [1.5] is not a valid list of integers']);
  });

  it('list: arrays only, elements untouched', () => {
    expect(coerce('list', [1, 'a', { b: 2 }])).toEqual([1, 'a', { b: 2 }]);
    expect(rejection('list', 'a,b')).toEqual(['field "f": "a,b" is not a list']);
  });

  it('map: plain objects or JSON strings of objects', () => {
    expect(coerce('map', { a: 1 })).toEqual({ a: 1 });
    expect(coerce('map', '{"a":1}')).toEqual({ a: 1 });
    expect(rejection('map', '[1]')).toEqual(['field "f": "[1]" is not a map']);
    expect(rejection('map', [1])).toEqual(['field "f": [1] is not a map']);
  });

  it('kv-pairs: objects of scalars or "k=v" lists', () => {
    expect(coerce('kv-pairs', { a: 'x', n: 1 })).toEqual({ a: 'x', n: '1' });
    expect(coerce('kv-pairs', ['a=x', 'b=y=z'])).toEqual({ a: 'x', b: 'y=z' });
    expect(coerce('kv-pairs', 'a=1,b=2')).toEqual({ a: '1', b: '2' });
    const reason = 'is not a map of strings or a list of "key=value" pairs';
    expect(rejection('kv-pairs', ['novalue'])).toEqual([`field "f": ["novalue"] ${reason}`]);
    expect(rejection('kv-pairs', ['=x'])).toEqual([`field "f": ["=x"] ${reason}`]);
    expect(rejection('kv-pairs', { a: { nested: true } })).toEqual([`field "f": {"a":{"nested":true}} ${reason}`]);
  });

  it('name: letters, digits, "_", "." and "-", no slash', () => {
    expect(coerce('name', 'my-key_1.v2')).toBe('my-key_1.v2');
    for (const bad of ['a/b', '-lead', '', 'sp ace', 5]) {
      expect(rejection('name', bad)[0]).toMatch(/^field "f": .* is not a valid name/);
    }
  });

  it('time: RFC 3339 or unix seconds', () => {
    expect(coerce('time', '2024-01-02T03:04:05Z')).toEqual(new Date('2024-01-02T03:04:05Z'));
    expect(coerce('time', '2024-01-02T05:04:05.5+02:00')).toEqual(new Date('2024-01-02T03:04:05.500Z'));
    expect(coerce('time', 1700000000)).toEqual(new Date(1700000000 * 1000));
    expect(coerce('time', '1700000000')).toEqual(new Date(1700000000 * 1000));
    expect(rejection('time', '2024-01-02')).toEqual(['field "f": "2024-01-02" is not an RFC 3339 time or unix seconds']);
    expect(rejection('time', '2024-13-45T00:00:00Z')[0]).toMatch(/is not an RFC 3339 time/);
  });

  it('header: map of names to string lists', () => {
    expect(coerce('header', { 'X-A': 'one', 'X-B': ['two', 'three'] })).toEqual({ 'X-A': ['one'], 'X-B': ['two', 'three'] });
    expect(coerce('header', Buffer.from('{"X-A":["one"]}').toString('base64'))).toEqual({ 'X-A': ['one'] });
    expect(coerce('header', '{"X-A":"one"}')).toEqual({ 'X-A': ['one'] });
    expect(rejection('header', { 'X-A': 5 })[0]).toMatch(/^field "f": \{"X-A":5\} is not a map of header names/);
  });

  it('never echoes a sensitive value', () => {
    const errors = rejection('int', 'hunter2-secret', { sensitive: true });
    expect(errors).toEqual(['field "f": value is not a valid integer']);
  });

  it('truncates long values in messages', () => {
    const [message] = rejection('int', 'x'.repeat(500));
    expect(message.length).toBeLessThan(150);
  });
});

describe('createFieldData', () => {
  const schema: FieldMap = {
    name: { type: 'name', description: 'key name', required: true },
    ttl: { type: 'duration', description: 'lease', default: '1h' },
    exportable: { type: 'bool', description: 'export allowed' },
    count: { type: 'int', description: 'count' },
  };

  it('returns coerced values, coerced defaults for absent fields and undefined otherwise', () => {
    const fields = createFieldData(schema, { name: 'k1', exportable: 'true' });
    expect(fields.get('name')).toBe('k1');
    expect(fields.get('exportable')).toBe(true);
    expect(fields.get('ttl')).toBe(3600);
    expect(fields.has('ttl')).toBe(false);
    expect(fields.has('exportable')).toBe(true);
    expect(fields.get('count')).toBeUndefined();
  });

  it('treats null as absent', () => {
    const fields = createFieldData(schema, { name: 'k', ttl: null });
    expect(fields.get('ttl')).toBe(3600);
    expect(fields.has('ttl')).toBe(false);
  });

  it('reads path parameters through declared fields, ahead of the body', () => {
    const fields = createFieldData(schema, { name: 'body-name' }, { name: 'path-name' });
    expect(fields.get('name')).toBe('path-name');
    expect(fields.params).toEqual({ name: 'path-name' });
    expect(fields.raw).toEqual({ name: 'body-name' });
  });

  it('reports every problem at once, including missing required fields', () => {
    expect(() => createFieldData(schema, { ttl: 'soon', count: 'many' })).toThrow(
      expect.objectContaining({
        kind: 'bad-request',
        errors: [
          'missing required field "name"',
          'field "ttl": "soon" is not a valid duration',
          'field "count": "many" is not a valid integer',
        ],
      }),
    );
  });

  it('reports problems in declaration order whatever the body order, and an invalid required field once', () => {
    expect(() => createFieldData(schema, { count: 'many', ttl: 'soon', name: 'no/slash' })).toThrow(
      expect.objectContaining({
        errors: [
          'field "name": "no/slash" is not a valid name (letters, digits, "_", "." and "-", starting with a letter or digit)',
          'field "ttl": "soon" is not a valid duration',
          'field "count": "many" is not a valid integer',
        ],
      }),
    );
  });

  it('gives each request its own copy of a list default, the same one on every read', () => {
    const lists: FieldMap = { tags: { type: 'comma-string-list', description: 'tags', default: ['a'] } };
    const first = createFieldData(lists, {});
    first.get<string[]>('tags').push('b');
    expect(first.get('tags')).toEqual(['a', 'b']);
    expect(createFieldData(lists, {}).get('tags')).toEqual(['a']);
  });

  it('skips the required check when asked (reads and deletes)', () => {
    expect(createFieldData(schema, {}, {}, { enforceRequired: false }).get('name')).toBeUndefined();
  });

  it('ignores inherited property names in the request', () => {
    const field: FieldSchema = { type: 'string', description: 'odd name' };
    const fields = createFieldData(Object.fromEntries([['toString', field]]), {});
    expect(fields.has('toString')).toBe(false);
    expect(fields.get('toString')).toBeUndefined();
  });

  it('treats asking for an undeclared field as a programming error', () => {
    const fields = createFieldData(schema, { name: 'k' });
    expect(() => fields.get('nope')).toThrow('field "nope" is not declared on this path');
  });

  it('rejects an invalid declared default as a programming error, not a 400', () => {
    const broken: FieldMap = { ttl: { type: 'duration', description: 'x', default: 'forever' } };
    expect(() => createFieldData(broken, {})).toThrow('default of field "ttl" is not a valid duration');
    expect(() => createFieldData(broken, {})).not.toThrow(ServiceError);
  });
});
