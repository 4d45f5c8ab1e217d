import { buildOpenApi } from '@svc/framework';
import { MountedBackend, refusal, validateOpenApi } from '@svc/testing';
import { kubernetesBackendFactory } from './backend';

describe('kubernetes auth method: roles', () => {
  let method: MountedBackend;

  beforeEach(() => {
    method = MountedBackend.create(kubernetesBackendFactory, 'kubernetes');
  });

  it('creates, reads, lists, updates and deletes roles; names are case-insensitive', async () => {
    expect(await method.request('update', 'role/Web', { bound_service_account_names: 'web, web-*', bound_service_account_namespaces: 'shop', audience: 'vault', token_policies: 'Shop', token_ttl: '1h' })).toBeUndefined();
    expect(await method.read('role/web')).toEqual({
      bound_service_account_names: ['web', 'web-*'],
      bound_service_account_namespaces: ['shop'],
      bound_service_account_namespace_selector: '',
      audience: 'vault',
      alias_name_source: 'serviceaccount_uid',
      token_policies: ['shop'],
      policies: ['shop'],
      token_ttl: 3600,
      token_max_ttl: 0,
      token_explicit_max_ttl: 0,
      token_period: 0,
      period: 0,
      token_num_uses: 0,
      token_no_default_policy: false,
      token_bound_cidrs: [],
      token_type: 'default',
    });
    await method.write('role/jobs', { bound_service_account_names: '*', bound_service_account_namespace_selector: 'matchLabels:\n  team: jobs\n', audience: 'vault' });
    expect(await method.list('role/')).toEqual(['jobs', 'web']);
    await method.write('role/WEB', { alias_name_source: 'serviceaccount_name', token_max_ttl: '2h' });
    expect(await method.read('role/web')).toMatchObject({ bound_service_account_names: ['web', 'web-*'], alias_name_source: 'serviceaccount_name', token_ttl: 3600, token_max_ttl: 7200 });
    await method.request('delete', 'role/Web');
    expect(await method.read('role/web')).toBeUndefined();
    expect(await method.list('role/')).toEqual(['jobs']);
  });

  it('warns when a role sets no audience', async () => {
    const response = await method.request('update', 'role/any-audience', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop' });
    expect(response?.warnings).toEqual([expect.stringMatching(/sets no "audience"/)]);
  });

  it.each([
    ['a YAML selector', 'matchLabels:\n  team: shop\nmatchExpressions:\n  - key: stage\n    operator: In\n    values: [prod, staging]\n'],
    ['a JSON selector', '{"matchLabels":{"team":"shop"},"matchExpressions":[{"key":"frozen","operator":"DoesNotExist"}]}'],
    ['a YAML flow selector', '{matchLabels: {team: shop}}'],
  ])('accepts %s, kept as written', async (_, selector) => {
    await method.write('role/selected', { bound_service_account_names: 'web', bound_service_account_namespace_selector: selector, audience: 'vault' });
    expect(await method.read('role/selected')).toMatchObject({ bound_service_account_namespace_selector: selector.trim(), bound_service_account_namespaces: [] });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no names', { bound_service_account_namespaces: 'shop' }, /^missing required field "bound_service_account_names"$/],
    ['empty names', { bound_service_account_names: ' , ', bound_service_account_namespaces: 'shop' }, /^field "bound_service_account_names" cannot be empty$/],
    ['"*" among other names', { bound_service_account_names: '*,web', bound_service_account_namespaces: 'shop' }, /^field "bound_service_account_names": "\*" cannot be combined/],
    ['"*" among other namespaces', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop,*' }, /^field "bound_service_account_namespaces": "\*" cannot be combined/],
    ['neither namespaces nor a selector', { bound_service_account_names: 'web' }, /one of "bound_service_account_namespaces" and "bound_service_account_namespace_selector" must be set/],
    ['a selector that is not YAML', { bound_service_account_names: 'web', bound_service_account_namespace_selector: '{matchLabels: [' }, /^field "bound_service_account_namespace_selector": not JSON or YAML/],
    ['a selector that is a list', { bound_service_account_names: 'web', bound_service_account_namespace_selector: '[1, 2]' }, /^field "bound_service_account_namespace_selector": must be an object/],
    ['a selector with unknown members', { bound_service_account_names: 'web', bound_service_account_namespace_selector: '{"labels":{"a":"b"}}' }, /unknown member\(s\) labels/],
    ['a selector with a number as a label value', { bound_service_account_names: 'web', bound_service_account_namespace_selector: 'matchLabels: {tier: 1}' }, /matchLabels must map label names to strings/],
    ['a selector with an unknown operator', { bound_service_account_names: 'web', bound_service_account_namespace_selector: '{"matchExpressions":[{"key":"a","operator":"Like"}]}' }, /matchExpressions\[0\]: operator must be one of In, NotIn, Exists, DoesNotExist/],
    ['a selector with In but no values', { bound_service_account_names: 'web', bound_service_account_namespace_selector: '{"matchExpressions":[{"key":"a","operator":"In"}]}' }, /matchExpressions\[0\]: operator In needs values/],
    ['an unknown alias_name_source', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop', alias_name_source: 'pod_name' }, /alias_name_source/],
    ['a bad token_ttl', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop', token_ttl: 'soon' }, /token_ttl/],
  ])('refuses a role with %s (400 naming the problem), storing nothing', async (_, body, message) => {
    expect(await refusal(method.write('role/bad', body))).toEqual({ status: 400, message: expect.stringMatching(message) });
    expect(await method.read('role/bad')).toBeUndefined();
  });

  it('checks an update against the role it leaves', async () => {
    await method.write('role/web', { bound_service_account_names: 'web', bound_service_account_namespaces: 'shop' });
    expect(await refusal(method.write('role/web', { bound_service_account_namespaces: '' }))).toMatchObject({ status: 400, message: expect.stringMatching(/must be set/) });
    await method.write('role/web', { bound_service_account_namespace_selector: '{"matchLabels":{"team":"shop"}}', bound_service_account_namespaces: '' });
    expect(await method.read('role/web')).toMatchObject({ bound_service_account_namespaces: [], bound_service_account_names: ['web'] });
  });

  it('describes every path in help and a valid OpenAPI document', async () => {
    const document = buildOpenApi([{ prefix: '/auth/kubernetes/', backend: method.backend }], { title: 'kubernetes', version: '1' });
    expect(await validateOpenApi(document)).toEqual({ valid: true });
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/auth/kubernetes/config', '/auth/kubernetes/role/', '/auth/kubernetes/role/{name}', '/auth/kubernetes/login']));
    expect(method.backend.help('').help).toMatch(/kubernetes auth method/);
    expect(method.backend.help('config').help).toMatch(/token_reviewer_jwt/);
    expect(method.backend.help('role/web').help).toMatch(/bound_service_account_namespace_selector/);
    expect(method.backend.help('login').help).toMatch(/TokenReview/);
  });
});
