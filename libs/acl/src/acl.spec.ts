import { Acl, DEFAULT_POLICY_TEXT, parsePolicy } from './index';

/** An ACL from policy texts, named p0, p1, ... in order. */
function aclOf(...texts: string[]): Acl {
  return new Acl(texts.map((text, index) => parsePolicy(`p${index}`, text)));
}

/** One HCL path block granting the capabilities. */
function grant(pattern: string, ...capabilities: string[]): string {
  return `path "${pattern}" {\n  capabilities = ${JSON.stringify(capabilities)}\n}\n`;
}

const sorted = (capabilities: ReadonlySet<string>) => [...capabilities].sort();

/** Which of the given patterns governs `path`: each pattern grants a capability only it has. */
function winner(path: string, patterns: string[]): string {
  const capabilities = ['create', 'read', 'update', 'delete', 'list', 'patch'];
  const acl = aclOf(patterns.map((pattern, index) => grant(pattern, capabilities[index])).join('\n'));
  const [granted] = [...acl.capabilities(path)];
  return patterns[capabilities.indexOf(granted)];
}

describe('Acl: matching', () => {
  it('matches exact paths only exactly', () => {
    const acl = aclOf(grant('secret/foo', 'read'));
    expect(sorted(acl.capabilities('secret/foo'))).toEqual(['read']);
    expect(sorted(acl.capabilities('/secret/foo'))).toEqual(['read']);
    expect(acl.capabilities('secret/foo/bar').size).toBe(0);
    expect(acl.capabilities('secret/fo').size).toBe(0);
  });

  it('treats a trailing * as a prefix glob, and * alone as everything', () => {
    const acl = aclOf(grant('secret/fo*', 'read'), grant('*', 'list'));
    expect(sorted(acl.capabilities('secret/fo'))).toEqual(['read']);
    expect(sorted(acl.capabilities('secret/foo/bar/baz'))).toEqual(['read']);
    expect(sorted(acl.capabilities('secret/f'))).toEqual(['list']);
    expect(sorted(acl.capabilities('anything'))).toEqual(['list']);
  });

  it('matches + against exactly one segment', () => {
    const acl = aclOf(grant('secret/+/config', 'read'), grant('+/top', 'list'));
    expect(sorted(acl.capabilities('secret/app/config'))).toEqual(['read']);
    expect(acl.capabilities('secret/config').size).toBe(0);
    expect(acl.capabilities('secret/a/b/config').size).toBe(0);
    expect(acl.capabilities('secret/app/config/more').size).toBe(0);
    expect(sorted(acl.capabilities('kv/top'))).toEqual(['list']);
    expect(acl.capabilities('kv/x/top').size).toBe(0);
  });

  it('combines + with a trailing *', () => {
    const acl = aclOf(grant('secret/+/*', 'read'), grant('team/+/fo*', 'list'));
    expect(sorted(acl.capabilities('secret/app/'))).toEqual(['read']);
    expect(sorted(acl.capabilities('secret/app/a/b/c'))).toEqual(['read']);
    expect(acl.capabilities('secret/app').size).toBe(0);
    expect(sorted(acl.capabilities('team/x/fo'))).toEqual(['list']);
    expect(sorted(acl.capabilities('team/x/foo/bar'))).toEqual(['list']);
    expect(acl.capabilities('team/x/bar').size).toBe(0);
    expect(acl.capabilities('team/fo').size).toBe(0);
  });

  it('gives an empty set when nothing matches', () => {
    expect(aclOf(grant('secret/*', 'read')).capabilities('sys/mounts').size).toBe(0);
    expect(new Acl([]).capabilities('secret/x').size).toBe(0);
  });

  it('lets an exact rule cover its path with a trailing slash for list, as Vault does', () => {
    const acl = aclOf(grant('secret/dir', 'list'));
    expect(acl.authorize('secret/dir/', 'list').allowed).toBe(true);
    expect(acl.authorize('secret/dir/', 'read').allowed).toBe(false);
  });
});

describe('Acl: precedence', () => {
  it('prefers an exact match over any wildcard', () => {
    expect(winner('secret/foo', ['secret/*', 'secret/+', 'secret/foo', 'secret/fo*'])).toBe('secret/foo');
  });

  it('prefers the longest prefix glob', () => {
    expect(winner('secret/foo/bar', ['secret/*', 'secret/foo/*', 'secret/f*'])).toBe('secret/foo/*');
  });

  // Each case below pits two patterns so that a later rule would pick the other one.
  it('1: the pattern whose first wildcard comes earlier loses', () => {
    expect(winner('secret/foo/bar', ['secret/+/bar', 'secret/fo*'])).toBe('secret/fo*');
    expect(winner('secret/foo/bar/baz', ['secret/+/bar/baz', 'secret/foo/+/+'])).toBe('secret/foo/+/+');
  });

  it('2: the pattern ending in * loses to one that does not', () => {
    expect(winner('secret/x/bar', ['secret/+/bar*', 'secret/+/bar'])).toBe('secret/+/bar');
  });

  it('3: the pattern with more + segments loses', () => {
    expect(winner('secret/a/b/bazzzz', ['secret/+/+/bazzz*', 'secret/+/b/ba*'])).toBe('secret/+/b/ba*');
  });

  it('4: the shorter pattern loses', () => {
    expect(winner('secret/x/bb/cccc', ['secret/+/+/cccc', 'secret/+/bb/+'])).toBe('secret/+/+/cccc');
  });

  it('5: the lexicographically smaller pattern loses, whatever the order written', () => {
    expect(winner('secret/x/bb/cc', ['secret/+/bb/+', 'secret/+/+/cc'])).toBe('secret/+/bb/+');
    expect(winner('secret/x/bb/cc', ['secret/+/+/cc', 'secret/+/bb/+'])).toBe('secret/+/bb/+');
  });

  it('applies only the winning rule, even when a losing one grants more', () => {
    const acl = aclOf(grant('secret/*', 'read', 'update', 'delete'), grant('secret/locked/*', 'list'));
    expect(sorted(acl.capabilities('secret/locked/x'))).toEqual(['list']);
    expect(acl.authorize('secret/locked/x', 'read').allowed).toBe(false);
  });
});

describe('Acl: several policies', () => {
  it('merges the capabilities of rules for the same pattern', () => {
    const acl = aclOf(grant('secret/*', 'read'), grant('secret/*', 'list', 'sudo'));
    expect(sorted(acl.capabilities('secret/x'))).toEqual(['list', 'read', 'sudo']);
  });

  it('lets deny win over every grant for the same pattern, in either order', () => {
    for (const texts of [
      [grant('secret/x', 'read', 'update'), grant('secret/x', 'deny')],
      [grant('secret/x', 'deny'), grant('secret/x', 'read', 'update')],
    ]) {
      const acl = aclOf(...texts);
      expect(sorted(acl.capabilities('secret/x'))).toEqual(['deny']);
      expect(acl.authorize('secret/x', 'read')).toMatchObject({ allowed: false, reason: expect.stringMatching(/denied/) });
    }
  });

  it('lets a more specific deny override a broader grant', () => {
    const acl = aclOf(grant('secret/*', 'read'), grant('secret/private/*', 'deny'));
    expect(sorted(acl.capabilities('secret/private/key'))).toEqual(['deny']);
    expect(sorted(acl.capabilities('secret/public'))).toEqual(['read']);
  });

  it('merges parameter rules as Vault does', () => {
    const acl = aclOf(
      'path "secret/x" {\n capabilities = ["update"]\n allowed_parameters = { "a" = ["1"], "b" = [] }\n required_parameters = ["a"]\n}',
      'path "secret/x" {\n capabilities = ["create"]\n allowed_parameters = { "a" = ["2"], "b" = ["only"], "c" = [] }\n required_parameters = ["c"]\n}',
    );
    expect(acl.authorize('secret/x', 'create', { a: '2', b: 'anything', c: 'x' }).allowed).toBe(true);
    expect(acl.authorize('secret/x', 'update', { a: '1', c: 'x' }).allowed).toBe(true);
    expect(acl.authorize('secret/x', 'update', { a: '3', c: 'x' }).reason).toBe('this value of parameter "a" is not allowed');
    expect(acl.authorize('secret/x', 'update', { a: '1' }).reason).toBe('missing required parameter "c"');
  });
});

describe('Acl: authorize', () => {
  const acl = aclOf(grant('secret/*', 'read', 'list'), grant('sys/mounts', 'sudo', 'read'));

  it('needs the capability named like the operation', () => {
    expect(acl.authorize('secret/x', 'read')).toMatchObject({ allowed: true, rule: { pattern: 'secret/*' } });
    expect(acl.authorize('secret/x', 'update')).toMatchObject({
      allowed: false,
      reason: 'the policy rule for path "secret/*" does not grant the "update" capability',
    });
    expect(acl.authorize('other', 'read')).toEqual({
      allowed: false,
      capabilities: new Set(),
      reason: 'no policy grants access to this path',
    });
  });

  it('reports sudo among the capabilities without granting any operation by itself', () => {
    expect(sorted(acl.authorize('sys/mounts', 'read').capabilities)).toEqual(['read', 'sudo']);
    expect(aclOf(grant('sys/raw', 'sudo')).authorize('sys/raw', 'read').allowed).toBe(false);
  });
});

describe('Acl.root', () => {
  it('grants everything with the root capability', () => {
    const root = Acl.root();
    expect(root.isRoot).toBe(true);
    expect(sorted(root.capabilities('sys/anything'))).toEqual(['root']);
    expect(root.authorize('secret/x', 'delete', { any: 'thing' })).toEqual({
      allowed: true,
      capabilities: new Set(['root']),
    });
    expect(aclOf(grant('*', 'sudo')).isRoot).toBe(false);
  });
});

describe('the default policy', () => {
  const acl = new Acl([parsePolicy('default', DEFAULT_POLICY_TEXT)]);

  it('lets a token look itself up but not read secrets', () => {
    expect(acl.authorize('auth/token/lookup-self', 'read').allowed).toBe(true);
    expect(acl.authorize('secret/foo', 'read').allowed).toBe(false);
    expect(acl.capabilities('secret/foo').size).toBe(0);
  });

  it('covers the cubbyhole, wrapping and hashing paths', () => {
    expect(sorted(acl.capabilities('cubbyhole/mine'))).toEqual(['create', 'delete', 'list', 'read', 'update']);
    expect(acl.authorize('cubbyhole/', 'list').allowed).toBe(true);
    expect(acl.authorize('sys/wrapping/unwrap', 'update').allowed).toBe(true);
    expect(acl.authorize('sys/tools/hash/sha2-512', 'update').allowed).toBe(true);
    expect(acl.authorize('sys/leases/lookup', 'update').allowed).toBe(true);
    expect(acl.authorize('sys/leases/revoke', 'update').allowed).toBe(false);
  });
});

describe('Acl: what a token reaches under a prefix (UI listings)', () => {
  it.each([
    ['exact path under the mount', grant('kv/data/app', 'read'), 'kv/', true],
    ['exact path naming the mount itself', grant('kv', 'read'), 'kv/', true],
    ['prefix glob inside the mount', grant('kv/data/*', 'read'), 'kv/', true],
    ['prefix glob above the mount', grant('k*', 'list'), 'kv/', true],
    ['segment wildcard for the mount', grant('+/data/app', 'read'), 'kv/', true],
    ['segment wildcard further in', grant('kv/+/app', 'read'), 'kv/', true],
    ['another mount', grant('kv2/data/*', 'read'), 'kv/', false],
    ['a mount whose name only starts the same', grant('kvx', 'read'), 'kv/', false],
    ['segment pattern of another mount', grant('other/+/app', 'read'), 'kv/', false],
    ['a deny rule', grant('kv/*', 'deny'), 'kv/', false],
  ])('%s', (_case, policy, prefix, expected) => {
    expect(aclOf(policy).grantsUnder(prefix)).toBe(expected);
  });

  it('the root ACL reaches everything; its rules are none', () => {
    expect(Acl.root().grantsUnder('anything/')).toBe(true);
    expect(Acl.root().rules).toEqual([]);
  });

  it('lists the merged rules, one per pattern', () => {
    const acl = aclOf(grant('kv/*', 'read'), grant('kv/*', 'list'), grant('sys/mounts', 'read'));
    expect(acl.rules.map((rule) => [rule.pattern, sorted(rule.capabilities)])).toEqual([
      ['kv/*', ['list', 'read']],
      ['sys/mounts', ['read']],
    ]);
  });
});
