import { passwordPolicyKey } from '@svc/engine-host';
import { Backend } from '@svc/framework';
import type { Barrier } from '@svc/storage';
import { MountedBackend, mountStorage, refusal, SAMPLE_PASSWORD_POLICY as POLICY, testMount, unsealedBarrier } from '@svc/testing';
import { passwordPolicyPaths } from './password-policy-paths';

describe('sys/policies/password', () => {
  let barrier: Barrier;
  let sys: MountedBackend;

  beforeEach(() => {
    barrier = unsealedBarrier();
    const mount = testMount('system', { path: 'sys/' });
    sys = new MountedBackend(new Backend({ type: 'system', help: 'sys/policies/password', paths: passwordPolicyPaths({ barrier }) }), mount, mountStorage(mount));
  });

  it('writes, reads, lists, generates from and deletes a policy', async () => {
    expect(await sys.request('update', 'policies/password/short', { policy: POLICY })).toBeUndefined();
    expect(await sys.read('policies/password/short')).toEqual({ policy: POLICY });
    expect(await sys.list('policies/password/')).toEqual(['short']);

    const { password } = (await sys.read('policies/password/short/generate'))!;
    expect(password).toMatch(/^[a-z0-9]{12}$/);
    expect(password.replace(/\D/g, '').length).toBeGreaterThanOrEqual(2);

    expect(await sys.request('delete', 'policies/password/short')).toBeUndefined();
    expect(await sys.list('policies/password/')).toEqual([]);
    expect(await refusal(sys.read('policies/password/short'))).toEqual({ status: 404, message: 'password policy "short" does not exist' });
  });

  it('keeps policies where engines read them, apart for each namespace', async () => {
    await sys.write('policies/password/short', { policy: POLICY });
    expect((await barrier.get(passwordPolicyKey('', 'short')))?.toString('utf8')).toBe(POLICY);

    const team = sys.inNamespace('team/');
    expect(await team.list('policies/password/')).toEqual([]);
    await team.write('policies/password/short', { policy: POLICY.replace('length = 12', 'length = 16') });
    expect((await team.read('policies/password/short/generate'))?.password).toHaveLength(16);
    expect((await sys.read('policies/password/short/generate'))?.password).toHaveLength(12);
  });

  it('accepts a policy sent base64-encoded', async () => {
    // 48 bytes of policy: base64 without padding.
    const text = 'length = 8\nrule "charset" {\n  charset = "ab"\n}\n\n';
    await sys.write('policies/password/ab', { policy: Buffer.from(text, 'utf8').toString('base64') });
    expect(await sys.read('policies/password/ab')).toEqual({ policy: text });
    expect((await sys.read('policies/password/ab/generate'))?.password).toMatch(/^[ab]{8}$/);
  });

  it('refuses policies that cannot be parsed or satisfied, and keeps none of them', async () => {
    expect(await refusal(sys.write('policies/password/bad', { policy: 'length = 2\nrule "charset" {\n  charset = "a"\n}\n' }))).toEqual({
      status: 400,
      message: 'invalid password policy: password policy: "length" must be an integer from 4 to 4096',
    });
    expect(await refusal(sys.write('policies/password/bad', { policy: 'length = 20' }))).toEqual({
      status: 400,
      message: 'invalid password policy: password policy: at least one rule "charset" is required',
    });
    expect(await refusal(sys.write('policies/password/bad', {}))).toEqual({ status: 400, message: 'missing required field "policy"' });
    expect(await sys.list('policies/password/')).toEqual([]);
  });

  it('refuses to generate from a policy that does not exist', async () => {
    expect(await refusal(sys.read('policies/password/missing/generate'))).toEqual({ status: 404, message: 'password policy "missing" does not exist' });
  });
});
