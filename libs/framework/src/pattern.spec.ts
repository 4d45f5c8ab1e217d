import { compilePattern, openApiTemplates, relativeTemplate } from './index';

describe('compilePattern', () => {
  it('matches literal segments exactly', () => {
    const config = compilePattern('config/keys');
    expect(config.match('config/keys')).toEqual({});
    expect(config.match('config/keys/')).toBeNull();
    expect(config.match('config')).toBeNull();
    expect(config.match('config/keysx')).toBeNull();
  });

  it('captures :name segments', () => {
    const pattern = compilePattern('keys/:name/rotate');
    expect(pattern.paramNames).toEqual(['name']);
    expect(pattern.match('keys/my-key/rotate')).toEqual({ name: 'my-key' });
    expect(pattern.match('keys//rotate')).toBeNull();
    expect(pattern.match('keys/a/b/rotate')).toBeNull();
  });

  it('refuses a :name segment ending in a period (unsupported path)', () => {
    const pattern = compilePattern('keys/:name');
    expect(pattern.match('keys/foo.')).toBeNull();
    expect(pattern.match('keys/..')).toBeNull();
    expect(pattern.match('keys/foo.bar')).toEqual({ name: 'foo.bar' });
  });

  it('captures the rest of the path with *name, trailing slash included', () => {
    const pattern = compilePattern('data/*path');
    expect(pattern.match('data/a/b/c')).toEqual({ path: 'a/b/c' });
    expect(pattern.match('data/dir/')).toEqual({ path: 'dir/' });
    expect(pattern.match('data/')).toBeNull();
    expect(pattern.match('data')).toBeNull();
    expect(pattern.match('data/a/b.')).toBeNull();
  });

  it('lets literal segments follow the rest, as in mounts/*path/tune', () => {
    const pattern = compilePattern('mounts/*path/tune');
    expect(pattern.match('mounts/a/b/tune')).toEqual({ path: 'a/b' });
    expect(pattern.match('mounts/tune')).toBeNull();
    expect(pattern.match('mounts/a/b')).toBeNull();
    const [variant] = pattern.variants;
    expect(relativeTemplate(variant, 'mounts/')).toEqual({ path: '/{path}/tune', bound: [] });
    expect(relativeTemplate(variant, 'mounts/a')).toEqual({ path: '/tune', bound: ['path'] });
  });

  it('makes the last parameter optional with ?', () => {
    const random = compilePattern('random/:bytes?');
    expect(random.match('random')).toEqual({});
    expect(random.match('random/32')).toEqual({ bytes: '32' });
    expect(random.match('random/')).toBeNull();
    expect(random.match('random/32/x')).toBeNull();

    const sign = compilePattern('sign/:name/:algorithm?');
    expect(sign.match('sign/k')).toEqual({ name: 'k' });
    expect(sign.match('sign/k/sha2-256')).toEqual({ name: 'k', algorithm: 'sha2-256' });

    const everything = compilePattern('*path?');
    expect(everything.match('')).toEqual({});
    expect(everything.match('a/b/')).toEqual({ path: 'a/b/' });
  });

  it('treats a trailing slash as part of the pattern', () => {
    const roles = compilePattern('roles/');
    expect(roles.match('roles/')).toEqual({});
    expect(roles.match('roles')).toBeNull();
  });

  it('matches the mount root with an empty pattern', () => {
    expect(compilePattern('').match('')).toEqual({});
    expect(compilePattern('').match('x')).toBeNull();
  });

  it.each([
    ['keys/*rest/:more', /only literal segments may follow/],
    ['keys/:name?/more', /only as the last segment/],
    ['keys/:na-me', /invalid parameter/],
    ['keys/:', /invalid parameter/],
    ['keys/a:b', /mixes literal text and parameters/],
    ['a/:x/:x', /repeats a parameter name/],
  ])('rejects the malformed pattern %p', (source, message) => {
    expect(() => compilePattern(source)).toThrow(message);
  });
});

describe('openApiTemplates', () => {
  it('turns parameters into {name} and expands optional parameters', () => {
    expect(openApiTemplates('keys/:name')).toEqual(['/keys/{name}']);
    expect(openApiTemplates('data/*path')).toEqual(['/data/{path}']);
    expect(openApiTemplates('random/:bytes?')).toEqual(['/random', '/random/{bytes}']);
    expect(openApiTemplates('roles/')).toEqual(['/roles/']);
    expect(openApiTemplates('')).toEqual(['/']);
  });
});

describe('relativeTemplate', () => {
  const [keyVariant] = compilePattern('keys/:name').variants;

  it('places a template below the queried path', () => {
    expect(relativeTemplate(keyVariant, '')).toEqual({ path: '/keys/{name}', bound: [] });
    expect(relativeTemplate(keyVariant, 'keys/')).toEqual({ path: '/{name}', bound: [] });
    expect(relativeTemplate(keyVariant, '/keys')).toEqual({ path: '/{name}', bound: [] });
  });

  it('binds parameters given concretely in the queried path', () => {
    expect(relativeTemplate(keyVariant, 'keys/k1')).toEqual({ path: '/', bound: ['name'] });
    const [rest] = compilePattern('data/*path').variants;
    expect(relativeTemplate(rest, 'data/a/b')).toEqual({ path: '/', bound: ['path'] });
  });

  it('leaves out templates not at or below the queried path', () => {
    expect(relativeTemplate(keyVariant, 'config')).toBeNull();
    expect(relativeTemplate(keyVariant, 'keys/k1/rotate')).toBeNull();
  });
});
