import { Acl, parsePolicy, wrappingTtlViolation } from './index';

/** An ACL with one rule on secret/x granting create, update, patch and read, plus `options`. */
function aclWith(options: string): Acl {
  const text = `path "secret/x" {\n  capabilities = ["create", "update", "patch", "read"]\n${options}\n}`;
  return new Acl([parsePolicy('params', text)]);
}

function reason(acl: Acl, data: Record<string, unknown>, operation: 'create' | 'update' | 'patch' = 'update') {
  const result = acl.authorize('secret/x', operation, data);
  return result.allowed ? 'allowed' : result.reason;
}

describe('denied_parameters', () => {
  it('denies a key listed with [] whatever its value, matching names case-insensitively', () => {
    const acl = aclWith('denied_parameters = { "Admin" = [] }');
    expect(reason(acl, { admin: 'false', other: 1 })).toBe('parameter "admin" is denied');
    expect(reason(acl, { ADMIN: null })).toBe('parameter "ADMIN" is denied');
    expect(reason(acl, { other: 1 })).toBe('allowed');
  });

  it('denies every key with "*"', () => {
    const acl = aclWith('denied_parameters = { "*" = [] }');
    expect(reason(acl, { anything: 'x' })).toBe('parameter "anything" is denied: this path denies every parameter');
    expect(reason(acl, {})).toBe('allowed');
  });

  it('denies listed values, with prefix, suffix and substring globs, never echoing the value', () => {
    const acl = aclWith('denied_parameters = { "policy" = ["root", "admin-*", "*-prod", "*secret*", 7] }');
    for (const denied of ['root', 'admin-team', '-prod', 'x-prod', 'mysecretthing', 7]) {
      expect(reason(acl, { policy: denied })).toBe('this value of parameter "policy" is denied');
    }
    for (const allowed of ['rooted', 'admin', 'prod', 'secre', '7', 8]) {
      expect(reason(acl, { policy: allowed })).toBe('allowed');
    }
  });

  it('denies a list value when any element is denied', () => {
    const acl = aclWith('denied_parameters = { "policies" = ["*admin*"] }');
    expect(reason(acl, { policies: ['dev', 'team-admin'] })).toBe('this value of parameter "policies" is denied');
    expect(reason(acl, { policies: ['dev', 'ops'] })).toBe('allowed');
  });

  it('treats a lone "*" value literally, as Vault does', () => {
    const acl = aclWith('denied_parameters = { "mode" = ["*"] }');
    expect(reason(acl, { mode: 'fast' })).toBe('allowed');
    expect(reason(acl, { mode: '*' })).toBe('this value of parameter "mode" is denied');
  });
});

describe('allowed_parameters', () => {
  it('allows only listed keys', () => {
    const acl = aclWith('allowed_parameters = { "name" = [], "ttl" = [] }');
    expect(reason(acl, { name: 'a', TTL: '1h' })).toBe('allowed');
    expect(reason(acl, { name: 'a', extra: true })).toBe('parameter "extra" is not allowed');
  });

  it('allows any key with "*" = [], still checking the values of listed keys', () => {
    expect(reason(aclWith('allowed_parameters = { "*" = [] }'), { whatever: 1 })).toBe('allowed');
    const acl = aclWith('allowed_parameters = { "*" = [], "env" = ["dev"] }');
    expect(reason(acl, { whatever: 1, env: 'dev' })).toBe('allowed');
    expect(reason(acl, { whatever: 1, env: 'prod' })).toBe('this value of parameter "env" is not allowed');
  });

  it('restricts values, with globs', () => {
    const acl = aclWith('allowed_parameters = { "env" = ["dev", "test-*", "*-sandbox", "*shared*", true] }');
    for (const allowed of ['dev', 'test-1', 'my-sandbox', 'the-shared-one', true]) {
      expect(reason(acl, { env: allowed })).toBe('allowed');
    }
    for (const refused of ['prod', 'dev2', 'test', 'sandbox', false, 'true']) {
      expect(reason(acl, { env: refused })).toBe('this value of parameter "env" is not allowed');
    }
  });

  it('allows a list value when every element is allowed, or the list as a whole', () => {
    const acl = aclWith('allowed_parameters = { "policies" = ["dev-*", ["ops", "audit"]] }');
    expect(reason(acl, { policies: ['dev-a', 'dev-b'] })).toBe('allowed');
    expect(reason(acl, { policies: ['ops', 'audit'] })).toBe('allowed');
    expect(reason(acl, { policies: ['dev-a', 'prod'] })).toBe('this value of parameter "policies" is not allowed');
    expect(reason(acl, { policies: [] })).toBe('this value of parameter "policies" is not allowed');
  });

  it('checks denied parameters before allowed ones', () => {
    const acl = aclWith('allowed_parameters = { "name" = [] }\ndenied_parameters = { "name" = ["root"] }');
    expect(reason(acl, { name: 'root' })).toBe('this value of parameter "name" is denied');
    expect(reason(acl, { name: 'dev' })).toBe('allowed');
  });
});

describe('required_parameters', () => {
  it('requires the listed parameters', () => {
    const acl = aclWith('required_parameters = ["owner", "Team"]');
    expect(reason(acl, { owner: 'a', team: 'b' })).toBe('allowed');
    expect(reason(acl, { owner: 'a' })).toBe('missing required parameter "team"');
    expect(reason(acl, {})).toBe('missing required parameter "owner"');
  });
});

describe('parameter rules apply to writes only', () => {
  const acl = aclWith('required_parameters = ["owner"]\ndenied_parameters = { "*" = [] }');

  it.each(['create', 'update', 'patch'] as const)('checks %s', (operation) => {
    expect(reason(acl, { x: 1 }, operation)).toBe('missing required parameter "owner"');
  });

  it('does not check read', () => {
    expect(acl.authorize('secret/x', 'read', { x: 1 }).allowed).toBe(true);
  });
});

describe('wrapping TTL bounds', () => {
  const ruleOf = (acl: Acl) => acl.rule('secret/x', 'update')!;

  it('exposes the bounds of the governing rule in seconds', () => {
    const acl = aclWith('min_wrapping_ttl = "1m"\nmax_wrapping_ttl = "1h"');
    expect(ruleOf(acl)).toMatchObject({ minWrappingTtl: 60, maxWrappingTtl: 3600 });
    expect(acl.authorize('secret/x', 'update', {}).rule).toMatchObject({ minWrappingTtl: 60, maxWrappingTtl: 3600 });
  });

  it('requires wrapping within the bounds', () => {
    const rule = ruleOf(aclWith('min_wrapping_ttl = "1m"\nmax_wrapping_ttl = "1h"'));
    expect(wrappingTtlViolation(rule, undefined)).toBe('this path requires the response to be wrapped');
    expect(wrappingTtlViolation(rule, 30)).toBe('the wrapping TTL is below the minimum of 60s for this path');
    expect(wrappingTtlViolation(rule, 7200)).toBe('the wrapping TTL exceeds the maximum of 3600s for this path');
    expect(wrappingTtlViolation(rule, 60)).toBeUndefined();
    expect(wrappingTtlViolation(rule, 3600)).toBeUndefined();
  });

  it('asks nothing of a rule without bounds', () => {
    expect(wrappingTtlViolation(ruleOf(aclWith('')), undefined)).toBeUndefined();
  });

  it('keeps the smaller non-zero bound of each kind across policies, and refuses bounds merged into min > max', () => {
    const policy = (name: string, options: string) =>
      parsePolicy(name, `path "secret/x" {\n capabilities = ["update"]\n ${options}\n}`);
    const acl = new Acl([
      policy('a', 'min_wrapping_ttl = "10m"\nmax_wrapping_ttl = "2h"'),
      policy('b', 'max_wrapping_ttl = "5m"'),
      policy('c', ''),
    ]);
    expect(ruleOf(acl)).toMatchObject({ minWrappingTtl: 600, maxWrappingTtl: 300 });
    expect(wrappingTtlViolation(ruleOf(acl), 400)).toBe(
      'the policies for this path set a minimum wrapping TTL above the maximum',
    );
  });
});
