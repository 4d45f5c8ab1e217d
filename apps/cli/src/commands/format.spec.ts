import type { Envelope } from '@svc/sdk';
import { Readable } from 'node:stream';
import type { CommandContext, OutputFormat } from './context';
import { humanDuration, loadYaml, printSecret } from './format';

function printed(secret: Envelope | null, format: OutputFormat = 'table', field?: string, isTTY = false): { stdout: string; error?: string } {
  let stdout = '';
  const ctx = {
    io: { stdout: { write: (chunk: string) => (stdout += chunk), isTTY }, stderr: { write: () => true }, stdin: Readable.from([]), env: {} },
    format,
    field,
  } as unknown as CommandContext;
  try {
    printSecret(ctx, secret, 'Success! Nothing to show.');
    return { stdout };
  } catch (err) {
    return { stdout, error: (err as Error).message };
  }
}

const base: Envelope = { request_id: 'r', lease_id: '', renewable: false, lease_duration: 0, data: null, wrap_info: null, warnings: null, auth: null };
const auth: Envelope['auth'] = {
  client_token: 'svs.token',
  accessor: 'acc',
  policies: ['default', 'ops'],
  token_policies: ['default', 'ops'],
  metadata: { team: 'a' },
  lease_duration: 3600,
  renewable: true,
  entity_id: '',
  token_type: 'service',
  orphan: false,
  num_uses: 0,
  mfa_requirement: null,
};
const wrapInfo: Envelope['wrap_info'] = { token: 'svs.wrap', accessor: 'wacc', ttl: 300, creation_time: '2026-01-01T00:00:00Z', creation_path: 'auth/token/create' };

describe('humanDuration', () => {
  it.each([
    [0, '0s'],
    [45, '45s'],
    [90, '1m30s'],
    [3600, '1h'],
    [2764800, '768h'],
  ])('%p seconds is %p', (seconds, text) => expect(humanDuration(seconds)).toBe(text));
});

describe('printSecret', () => {
  it('prints the auth block of a token answer, not an empty table', () => {
    expect(printed({ ...base, auth }).stdout).toBe(
      [
        'Key                  Value',
        '---                  -----',
        'token                svs.token',
        'token_accessor       acc',
        'token_duration       1h',
        'token_renewable      true',
        'token_policies       [default ops]',
        'identity_policies    []',
        'policies             [default ops]',
        'token_meta_team      a',
        '',
      ].join('\n'),
    );
  });

  it('prints the wrapping token of a wrapped answer', () => {
    const { stdout } = printed({ ...base, wrap_info: { ...wrapInfo, wrapped_accessor: 'inner' } });
    expect(stdout).toMatch(/^wrapping_token:\s+svs\.wrap$/m);
    expect(stdout).toMatch(/^wrapping_token_ttl:\s+5m$/m);
    expect(stdout).toMatch(/^wrapped_accessor:\s+inner$/m);
  });

  it('prints a lease as lease fields, and a lease without an ID as refresh_interval', () => {
    expect(printed({ ...base, lease_id: 'db/creds/r/1', lease_duration: 60, renewable: true, data: { username: 'u' } }).stdout).toMatch(
      /lease_id\s+db\/creds\/r\/1\nlease_duration\s+1m\nlease_renewable\s+true\nusername\s+u\n/,
    );
    expect(printed({ ...base, lease_duration: 60, data: { a: 'b' } }).stdout).toMatch(/refresh_interval\s+1m\na\s+b\n/);
  });

  it('says so instead of printing an empty table, and for no answer at all', () => {
    expect(printed(base).stdout).toBe('Success! Nothing to show.\n');
    expect(printed(null).stdout).toBe('Success! Nothing to show.\n');
  });

  it('-field prints one value: data, auth or wrapping, raw, with a newline only on a terminal', () => {
    expect(printed({ ...base, data: { password: 'p w' } }, 'table', 'password').stdout).toBe('p w');
    expect(printed({ ...base, data: { password: 'p w' } }, 'table', 'password', true).stdout).toBe('p w\n');
    expect(printed({ ...base, auth }, 'table', 'token').stdout).toBe('svs.token');
    expect(printed({ ...base, wrap_info: wrapInfo }, 'table', 'wrapping_token').stdout).toBe('svs.wrap');
    expect(printed({ ...base, data: { list: [1, 2] } }, 'table', 'list').stdout).toBe('[1,2]');
    expect(printed({ ...base, data: {} }, 'table', 'missing').error).toBe('field "missing" not present in the answer');
  });

  it('prints the whole envelope as JSON or YAML', async () => {
    const secret = { ...base, data: { a: 'b' } };
    expect(JSON.parse(printed(secret, 'json').stdout)).toEqual(secret);
    await loadYaml();
    expect(printed(secret, 'yaml').stdout).toContain('data:\n  a: b\n');
  });
});
