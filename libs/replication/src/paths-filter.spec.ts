import { checkPathsFilter, dynamicFilter } from './paths-filter';

describe('paths filters', () => {
  it('normalizes mount and namespace paths and refuses anything else, naming the entry', () => {
    expect(checkPathsFilter('deny', ['secret', '/team/', 'team/kv/', 'secret/'])).toEqual({ mode: 'deny', paths: ['secret/', 'team/', 'team/kv/'] });
    expect(() => checkPathsFilter('block', [])).toThrow(/mode must be "allow" or "deny"/);
    expect(() => checkPathsFilter('allow', ['ok/', '../x'])).toThrow(/paths\[1\]/);
    expect(() => checkPathsFilter('allow', [''])).toThrow(/paths\[0\]/);
    expect(() => checkPathsFilter('allow', [3])).toThrow(/paths\[0\] must be a string/);
    expect(() => checkPathsFilter('allow', ['sys/'])).toThrow(/"sys\/" cannot be filtered/);
  });

  it('lists what a deny or allow filter keeps from the secondary', () => {
    const mounts = [
      { namespace: '', path: 'secret/' },
      { namespace: '', path: 'auth/userpass/' },
      { namespace: 'team/', path: 'kv/' },
      { namespace: 'other/', path: 'kv/' },
    ];
    const namespaces = ['', 'team/', 'other/'];
    expect(dynamicFilter(null, mounts, namespaces)).toEqual({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] });
    expect(dynamicFilter({ mode: 'deny', paths: ['secret/', 'team/'] }, mounts, namespaces)).toEqual({
      dynamic_filtered_mounts: ['secret/', 'team/kv/'],
      dynamic_filtered_namespaces: ['team/'],
    });
    expect(dynamicFilter({ mode: 'allow', paths: ['auth/userpass/', 'team/kv/'] }, mounts, namespaces)).toEqual({
      dynamic_filtered_mounts: ['other/kv/', 'secret/'],
      dynamic_filtered_namespaces: ['other/'],
    });
  });
});
