import { nameFields, providerSecretName, SecretNameError } from './names';

const secret = { namespace: 'team/', mount: 'kv/', accessor: 'kv_1a2b', secretName: 'apps/db-main' };
const fields = (type: string, key = '') => nameFields({ type, name: 'dest' }, secret, key);

describe('provider secret names', () => {
  it('default templates fit each provider\'s character rules', () => {
    expect(providerSecretName('cloud-sm', '', fields('cloud-sm'))).toBe('svc/kv_1a2b/apps/db-main');
    expect(providerSecretName('cloudb-kv', '', fields('cloudb-kv', 'pass.word'))).toBe('svc-kv-1a2b-apps-db-main-pass-word');
    expect(providerSecretName('cloudc-sm', '', fields('cloudc-sm'))).toBe('svc_kv_1a2b_apps_db-main');
    expect(providerSecretName('codehost', '', fields('codehost', 'token'))).toBe('SVC_KV_1A2B_APPS_DB_MAIN_TOKEN');
    expect(providerSecretName('webhost-project', '', fields('webhost-project', 'api-key'))).toBe('SVC_KV_1A2B_APPS_DB_MAIN_API_KEY');
  });

  it('custom templates see every field', () => {
    expect(providerSecretName('cloud-sm', '{{ .NamespaceBaseName }}/{{ .MountBaseName }}/{{ .SecretBaseName }}/{{ .DestinationName }}', fields('cloud-sm'))).toBe('team/kv/db-main/dest');
  });

  it('refuses names a provider cannot take, and templates that do not parse, saying why', () => {
    expect(() => providerSecretName('codehost', 'GITHUB_{{ .SecretKey }}', fields('codehost', 'x'))).toThrow(new SecretNameError('secret name "GITHUB_X" must not start with GITHUB_'));
    expect(() => providerSecretName('webhost-project', '{{ .SecretKey }}', fields('webhost-project', '9lives'))).toThrow(/must not start with a digit/);
    expect(() => providerSecretName('cloudb-kv', `{{ .SecretPath }}${'x'.repeat(127)}`, fields('cloudb-kv'))).toThrow(/longer than the 127 characters/);
    expect(() => providerSecretName('cloud-sm', '{{ .Nope', fields('cloud-sm'))).toThrow(/invalid secret_name_template/);
  });
});
