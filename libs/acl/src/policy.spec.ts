import { ServiceError } from '@svc/api-contract';
import { DEFAULT_POLICY_TEXT, parsePolicy, type PathRule } from './index';

/** The 400's messages for a policy that must not parse. */
function parseErrors(text: string, name = 'dev'): string[] {
  try {
    parsePolicy(name, text);
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).kind).toBe('bad-request');
    return (err as ServiceError).errors;
  }
  throw new Error('the policy parsed');
}

function ruleFor(rules: readonly PathRule[], pattern: string): PathRule {
  const rule = rules.find((candidate) => candidate.pattern === pattern);
  if (!rule) throw new Error(`no rule for ${pattern}`);
  return rule;
}

const FULL_HCL = `
# every option
path "secret/apps/*" {
  capabilities = ["create", "read", "update", "patch", "delete", "list", "sudo"]
  allowed_parameters = {
    "Owner" = []
    "env"   = ["dev", "prod-*", 3]
  }
  denied_parameters = {
    "admin" = []
  }
  required_parameters = ["Owner"]
  min_wrapping_ttl = "1m"
  max_wrapping_ttl = 3600
}

path "/sys/mounts" {
  capabilities = ["read"]
}
`;

describe('parsePolicy: HCL', () => {
  it('reads every option of a path block and keeps the text as written', () => {
    const policy = parsePolicy('Dev-Team', FULL_HCL);
    expect(policy.name).toBe('dev-team');
    expect(policy.text).toBe(FULL_HCL);
    expect(policy.rules.map((rule) => rule.pattern)).toEqual(['secret/apps/*', 'sys/mounts']);
    const apps = ruleFor(policy.rules, 'secret/apps/*');
    expect([...apps.capabilities].sort()).toEqual(['create', 'delete', 'list', 'patch', 'read', 'sudo', 'update']);
    expect(apps.allowedParameters).toEqual(
      new Map<string, unknown[]>([
        ['owner', []],
        ['env', ['dev', 'prod-*', 3]],
      ]),
    );
    expect(apps.deniedParameters).toEqual(new Map([['admin', []]]));
    expect(apps.requiredParameters).toEqual(['owner']);
    expect(apps.minWrappingTtl).toBe(60);
    expect(apps.maxWrappingTtl).toBe(3600);
    expect([...ruleFor(policy.rules, 'sys/mounts').capabilities]).toEqual(['read']);
  });

  it('keeps only deny when deny is listed with other capabilities', () => {
    const { rules } = parsePolicy('dev', 'path "secret/x" { capabilities = ["read", "deny", "list"] }');
    expect([...rules[0].capabilities]).toEqual(['deny']);
  });

  it("accepts Vault's subscribe and recover capabilities without granting anything", () => {
    const { rules } = parsePolicy('dev', 'path "secret/x" { capabilities = ["read", "subscribe", "recover"] }');
    expect([...rules[0].capabilities]).toEqual(['read']);
  });

  it.each([
    ['deny', ['deny']],
    ['read', ['list', 'read']],
    ['write', ['create', 'delete', 'list', 'read', 'update']],
    ['sudo', ['create', 'delete', 'list', 'read', 'sudo', 'update']],
  ])('maps the legacy policy = "%s" form as Vault does', (legacy, expected) => {
    const { rules } = parsePolicy('dev', `path "secret/x" { policy = "${legacy}" }`);
    expect([...rules[0].capabilities].sort()).toEqual(expected);
  });

  it('adds a legacy policy to the capabilities listed beside it', () => {
    const { rules } = parsePolicy('dev', 'path "secret/x" {\n policy = "read"\n capabilities = ["sudo"]\n}');
    expect([...rules[0].capabilities].sort()).toEqual(['list', 'read', 'sudo']);
  });

  it('accepts a policy with no path blocks, which grants nothing', () => {
    expect(parsePolicy('dev', '# nothing yet\n').rules).toEqual([]);
  });
});

describe('parsePolicy: JSON', () => {
  const expectReadOnSecret = (text: string) => {
    const { rules, text: kept } = parsePolicy('dev', text);
    expect(kept).toBe(text);
    expect(rules.map((rule) => [rule.pattern, [...rule.capabilities]])).toEqual([['secret/*', ['read']]]);
  };

  it('reads the object form', () => {
    expectReadOnSecret('{"path": {"secret/*": {"capabilities": ["read"]}}}');
  });

  it('reads the array-wrapped forms Vault also accepts', () => {
    expectReadOnSecret('  {"path": [{"secret/*": [{"capabilities": ["read"]}]}]}');
    expectReadOnSecret('{"path": [{"secret/*": {"capabilities": ["read"]}}]}');
  });

  it('reads parameter maps, keeping boolean and number values', () => {
    const text = JSON.stringify({
      path: {
        'secret/x': {
          capabilities: ['update'],
          allowed_parameters: { flag: [true, 1] },
          denied_parameters: [{ Admin: [] }],
          min_wrapping_ttl: '30s',
        },
      },
    });
    const [rule] = parsePolicy('dev', text).rules;
    expect(rule.allowedParameters).toEqual(new Map([['flag', [true, 1]]]));
    expect(rule.deniedParameters).toEqual(new Map([['admin', []]]));
    expect(rule.minWrappingTtl).toBe(30);
  });

  it('reports malformed JSON with its line and column, without quoting the document', () => {
    const errors = parseErrors('{\n  "path": {"secret/x": {"capabilities": ["read"],}}\n}');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^policy "dev": invalid JSON at line 2 column \d+: /);
    expect(errors[0]).not.toContain('capabilities');
  });

  it('reports a truncated JSON document (which the HCL library would accept)', () => {
    expect(parseErrors('{"path": {"secret/x": {"capabilities": ["read"]}}')[0]).toMatch(/^policy "dev": invalid JSON/);
  });
});

describe('parsePolicy: errors', () => {
  it('reports malformed HCL with its line and column', () => {
    expect(parseErrors('path "secret/x" {\n  capabilities = ["read"]\n\n')).toEqual([
      expect.stringMatching(/^policy "dev": invalid HCL: line 4 column \d+: /),
    ]);
  });

  it('names the policy, the pattern and the line of an unknown capability', () => {
    const text = 'path "secret/a" {\n  capabilities = ["read"]\n}\n\npath "secret/b" {\n  capabilities = ["reed"]\n}\n';
    expect(parseErrors(text)).toEqual(['policy "dev", path "secret/b" (line 5): unknown capability "reed"']);
  });

  it('gives the line of the right block when a pattern appears twice', () => {
    const text = 'path "secret/a" {\n  capabilities = ["read"]\n}\npath "secret/a" {\n  capabilities = ["bogus"]\n}\n';
    expect(parseErrors(text)).toEqual(['policy "dev", path "secret/a" (line 4): unknown capability "bogus"']);
  });

  it('names an unknown key inside a path block', () => {
    expect(parseErrors('path "secret/x" {\n  capabilities = ["read"]\n  capabilites = ["list"]\n}')).toEqual([
      'policy "dev", path "secret/x" (line 1): unknown key "capabilites"',
    ]);
  });

  it('rejects an empty pattern', () => {
    expect(parseErrors('path "" { capabilities = ["read"] }')).toEqual([
      'policy "dev", path "" (line 1): the path pattern is empty',
    ]);
  });

  it("rejects '+*', as Vault does", () => {
    expect(parseErrors('path "secret/+*" { capabilities = ["read"] }')[0]).toMatch(
      /^policy "dev", path "secret\/\+\*" \(line 1\): invalid use of wildcards/,
    );
  });

  it('rejects wrapping TTLs that are not durations', () => {
    expect(parseErrors('path "secret/x" {\n capabilities = ["read"]\n min_wrapping_ttl = "soon"\n}')).toEqual([
      expect.stringMatching(/^policy "dev", path "secret\/x" \(line 1\): min_wrapping_ttl is not a valid duration/),
    ]);
    expect(parseErrors('{"path": {"secret/x": {"max_wrapping_ttl": "-5s"}}}')).toEqual([
      expect.stringMatching(/^policy "dev", path "secret\/x": max_wrapping_ttl is not a valid duration/),
    ]);
  });

  it('rejects a minimum wrapping TTL above the maximum', () => {
    expect(parseErrors('path "secret/x" { min_wrapping_ttl = "2h"\n max_wrapping_ttl = "1h" }')).toEqual([
      'policy "dev", path "secret/x" (line 1): max_wrapping_ttl cannot be less than min_wrapping_ttl',
    ]);
  });

  it('rejects an unknown legacy policy, a capability list of the wrong type and a malformed parameter map', () => {
    const text = `path "secret/x" {
  policy = "all"
  capabilities = "read"
  allowed_parameters = { "a" = "b" }
  denied_parameters = ["a"]
  required_parameters = [1]
}`;
    const errors = parseErrors(text);
    const where = 'policy "dev", path "secret/x" (line 1): ';
    expect(errors.sort()).toEqual(
      [
        'policy must be one of "deny", "read", "write", "sudo"',
        'capabilities must be a list of strings',
        'allowed_parameters "a" must be a list of values ([] for any value)',
        'denied_parameters must be a map of parameter names to lists of values',
        'required_parameters must be a list of strings',
      ]
        .map((problem) => where + problem)
        .sort(),
    );
  });

  it('rejects unknown top-level keys and a path that is not a block', () => {
    expect(parseErrors('paths "secret/x" { capabilities = ["read"] }')).toEqual([
      'policy "dev": unknown key "paths" (expected path blocks)',
    ]);
    expect(parseErrors('{"path": {"secret/x": ["read"]}}')).toEqual([
      'policy "dev": path "secret/x" must be a block such as path "PATTERN" { capabilities = [...] }',
    ]);
  });

  it('rejects an empty document', () => {
    expect(parseErrors('  \n')).toEqual(['policy "dev": the policy document is empty']);
  });
});

describe('parsePolicy: names', () => {
  it('lower-cases names', () => {
    expect(parsePolicy(' Ops.Admins_1 ', 'path "a" { capabilities = ["read"] }').name).toBe('ops.admins_1');
  });

  it.each(['', 'a/b', 'has space', '.hidden', 'x*'])('rejects the name %j', (name) => {
    expect(parseErrors('path "a" { capabilities = ["read"] }', name)[0]).toMatch(/policy name/);
  });

  it.each(['root', 'ROOT'])('refuses to create or change the root policy (%s)', (name) => {
    expect(parseErrors('path "a" { capabilities = ["read"] }', name)).toEqual([
      'the root policy cannot be created or changed',
    ]);
  });
});

describe('DEFAULT_POLICY_TEXT', () => {
  it('parses', () => {
    const policy = parsePolicy('default', DEFAULT_POLICY_TEXT);
    expect(policy.rules.length).toBeGreaterThan(10);
    expect([...ruleFor(policy.rules, 'cubbyhole/*').capabilities].sort()).toEqual([
      'create',
      'delete',
      'list',
      'read',
      'update',
    ]);
  });
});
