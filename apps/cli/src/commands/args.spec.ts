import { closest, FlagSpecs, parseArgs, UsageError } from './args';

const specs: FlagSpecs = {
  address: { kind: 'string', description: 'address' },
  namespace: { kind: 'string', aliases: ['ns'], description: 'namespace' },
  'key-shares': { kind: 'int', description: 'shares' },
  reset: { kind: 'boolean', description: 'reset' },
  policy: { kind: 'list', description: 'policies' },
};

describe('parseArgs', () => {
  it('reads -flag=value, -flag value and --flag forms', () => {
    expect(parseArgs(['-address=http://a:1', '-key-shares', '3', '--namespace', 'ns1', 'path'], specs)).toEqual({
      flags: { address: 'http://a:1', 'key-shares': 3, namespace: 'ns1' },
      positionals: ['path'],
    });
  });

  it('keeps everything after the first = as the value', () => {
    expect(parseArgs(['-address=http://a:1/?x=y'], specs).flags.address).toBe('http://a:1/?x=y');
  });

  it('reads booleans alone or with a value', () => {
    expect(parseArgs(['-reset'], specs).flags.reset).toBe(true);
    expect(parseArgs(['--reset=false'], specs).flags.reset).toBe(false);
    expect(parseArgs(['-reset=1', 'key'], specs)).toEqual({ flags: { reset: true }, positionals: ['key'] });
  });

  it('accepts aliases under the canonical name', () => {
    expect(parseArgs(['-ns=team'], specs).flags).toEqual({ namespace: 'team' });
  });

  it('accepts flags after positionals, a lone - as a positional, and stops at --', () => {
    expect(parseArgs(['secret/a', '-', 'k=v', '-reset', '--', '-address=x'], specs)).toEqual({
      flags: { reset: true },
      positionals: ['secret/a', '-', 'k=v', '-address=x'],
    });
  });

  it('collects a repeated list flag, splitting commas; the last value of any other flag wins', () => {
    expect(parseArgs(['-policy=a,b', '-policy', 'c', '-address=x', '-address=y'], specs).flags).toEqual({ policy: ['a', 'b', 'c'], address: 'y' });
  });

  it('takes an empty value written with =, and K=V arguments that start like no flag', () => {
    expect(parseArgs(['-namespace=', 'path', 'password=-x'], specs)).toEqual({ flags: { namespace: '' }, positionals: ['path', 'password=-x'] });
  });

  it.each([
    [['-bogus'], 'unknown flag -bogus'],
    [['-adress=x'], 'unknown flag -adress (did you mean -address?)'],
    [['-reset=yes'], 'flag -reset must be true or false'],
    [['--bogus=1'], 'unknown flag -bogus'],
    [['-address'], 'flag -address needs a value'],
    [['-key-shares=three'], 'flag -key-shares must be an integer'],
    [['-reset=maybe'], 'flag -reset must be true or false'],
  ])('rejects %p', (argv, message) => {
    expect(() => parseArgs(argv, specs)).toThrow(new UsageError(message));
  });
});

describe('closest', () => {
  it('finds the nearest name within a third of its length, or nothing', () => {
    expect(closest('sttaus', ['status', 'secrets list'])).toBe('status');
    expect(closest('kv gte', ['kv get', 'kv put'])).toBe('kv get');
    expect(closest('frobnicate', ['status', 'read'])).toBeUndefined();
  });
});
