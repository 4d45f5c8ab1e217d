import { parseLabelSelector, selectorMatches } from './label-selector';
import { bindingProblem, type KubernetesRole } from './roles';

describe('which service accounts a role binds', () => {
  const role = (bound: Partial<KubernetesRole>) => ({ bound_service_account_names: ['*'], bound_service_account_namespaces: [], bound_service_account_namespace_selector: '', ...bound }) as KubernetesRole;
  const noNamespaces = async () => undefined;

  it.each<[string[], string, boolean]>([
    [['*'], 'anything', true],
    [['web'], 'web', true],
    [['web'], 'web-2', false],
    [['web-*'], 'web-2', true],
    [['web-*'], 'web', false],
    [['*-api'], 'orders-api', true],
    [['*-api'], 'orders-api-2', false],
    [['a*b*c'], 'a-b-c', true],
    [['a*b*c'], 'a-c', false],
    [['ab*ba'], 'aba', false],
    [['one', 'two-*'], 'two-1', true],
  ])('names %j bind %s: %s', async (names, name, bound) => {
    const problem = await bindingProblem('r', role({ bound_service_account_names: names, bound_service_account_namespaces: ['*'] }), { namespace: 'ns', name }, noNamespaces);
    expect(problem).toBe(bound ? undefined : `service account name "${name}" is not bound by role "r"`);
  });

  it('binds a namespace by name or glob, else by its labels (asked for only then), else not', async () => {
    const asked: string[] = [];
    const labels = async (namespace: string) => {
      asked.push(namespace);
      return namespace === 'payments' ? { team: 'money' } : undefined;
    };
    const bound = role({ bound_service_account_namespaces: ['shop', 'team-*'], bound_service_account_namespace_selector: '{"matchLabels":{"team":"money"}}' });
    expect(await bindingProblem('r', bound, { namespace: 'team-a', name: 'web' }, labels)).toBeUndefined();
    expect(asked).toEqual([]);
    expect(await bindingProblem('r', bound, { namespace: 'payments', name: 'web' }, labels)).toBeUndefined();
    expect(await bindingProblem('r', bound, { namespace: 'missing', name: 'web' }, labels)).toBe('namespace "missing" is not bound by role "r"');
    expect(asked).toEqual(['payments', 'missing']);
  });

  it.each<[string, Record<string, string>, boolean]>([
    ['{}', {}, true],
    ['{matchLabels: {team: shop}}', { team: 'shop', stage: 'prod' }, true],
    ['{matchLabels: {team: shop}}', { team: 'money' }, false],
    ['{matchExpressions: [{key: stage, operator: In, values: [prod, staging]}]}', { stage: 'staging' }, true],
    ['{matchExpressions: [{key: stage, operator: In, values: [prod]}]}', {}, false],
    ['{matchExpressions: [{key: stage, operator: NotIn, values: [dev]}]}', {}, true],
    ['{matchExpressions: [{key: stage, operator: NotIn, values: [dev]}]}', { stage: 'dev' }, false],
    ['{matchExpressions: [{key: frozen, operator: Exists}]}', { frozen: '' }, true],
    ['{matchExpressions: [{key: frozen, operator: DoesNotExist}]}', { frozen: 'yes' }, false],
    ['{matchLabels: {team: shop}, matchExpressions: [{key: frozen, operator: DoesNotExist}]}', { team: 'shop' }, true],
  ])('selector %s matches %j: %s', (selector, labels, matches) => {
    expect(selectorMatches(parseLabelSelector(selector), labels)).toBe(matches);
  });
});
