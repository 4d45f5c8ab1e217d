import { generateKeyPairSync } from 'node:crypto';
import { refusal } from '@svc/testing';
import { kubernetesFixture } from './testing/fixture';

describe('kubernetes auth method: config', () => {
  const k8s = kubernetesFixture();
  const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = (key: { export(options: { type: 'spki'; format: 'pem' }): string | Buffer }) => key.export({ type: 'spki', format: 'pem' }).toString();

  it('stores the configuration and reads it back without the token reviewer JWT', async () => {
    const method = k8s.mount();
    expect(await method.read('config')).toBeUndefined();
    await method.write('config', { kubernetes_host: `${k8s.api.url}/`, kubernetes_ca_cert: k8s.caCert, token_reviewer_jwt: k8s.reviewerJwt, pem_keys: [pem(rsaKey.publicKey), k8s.caCert] });
    const read = await method.read('config');
    expect(read).toEqual({
      kubernetes_host: k8s.api.url,
      kubernetes_ca_cert: k8s.caCert.trim(),
      pem_keys: [pem(rsaKey.publicKey).trim(), k8s.caCert.trim()],
      issuer: '',
      disable_iss_validation: true,
      disable_local_ca_jwt: false,
      use_annotations_as_alias_metadata: false,
      token_reviewer_jwt_set: true,
    });
    expect(JSON.stringify(read)).not.toContain(k8s.reviewerJwt);
  });

  it('changes only the fields an update sends; an empty token_reviewer_jwt clears it', async () => {
    const method = k8s.mount();
    await method.write('config', { kubernetes_host: 'https://10.0.0.1:6443', token_reviewer_jwt: 'reviewer-token', disable_local_ca_jwt: true });
    await method.write('config', { issuer: 'https://kubernetes.default.svc', disable_iss_validation: false, pem_keys: pem(ecKey.publicKey) });
    expect(await method.read('config')).toMatchObject({
      kubernetes_host: 'https://10.0.0.1:6443',
      issuer: 'https://kubernetes.default.svc',
      disable_iss_validation: false,
      disable_local_ca_jwt: true,
      pem_keys: [pem(ecKey.publicKey).trim()],
      token_reviewer_jwt_set: true,
    });
    await method.write('config', { token_reviewer_jwt: '' });
    expect(await method.read('config')).toMatchObject({ token_reviewer_jwt_set: false, kubernetes_host: 'https://10.0.0.1:6443' });
  });

  it('refuses a first configuration without a host', async () => {
    expect(await refusal(k8s.mount().write('config', { token_reviewer_jwt: 'x' }))).toEqual({ status: 400, message: 'missing required field "kubernetes_host"' });
  });

  const brokenCertificate = () => k8s.caCert.replace(/\n[A-Za-z0-9+/]{10}/, '\nAAAAAAAAAA');
  it.each<[string, () => Record<string, unknown>, RegExp]>([
    ['a host that is no URL', () => ({ kubernetes_host: '10.0.0.1:6443' }), /^field "kubernetes_host": must be the http or https URL of the Kubernetes API server/],
    ['a host of another scheme', () => ({ kubernetes_host: 'ftp://10.0.0.1' }), /^field "kubernetes_host"/],
    ['a host with a query', () => ({ kubernetes_host: 'https://10.0.0.1/?x=1' }), /^field "kubernetes_host"/],
    ['a CA that is no PEM', () => ({ kubernetes_ca_cert: 'not a certificate' }), /^field "kubernetes_ca_cert": not one or more PEM-encoded X.509 certificates$/],
    ['a CA whose PEM is damaged', () => ({ kubernetes_ca_cert: brokenCertificate() }), /^field "kubernetes_ca_cert"/],
    ['a pem_key that is no key', () => ({ pem_keys: [pem(rsaKey.publicKey), 'garbage'] }), /^field "pem_keys": entry 2 is not a PEM public key or certificate$/],
    ['a private key among the pem_keys', () => ({ pem_keys: [rsaKey.privateKey.export({ type: 'pkcs8', format: 'pem' })] }), /^field "pem_keys": entry 1 is not a PEM public key/],
    ['an Ed25519 pem_key', () => ({ pem_keys: [pem(generateKeyPairSync('ed25519').publicKey)] }), /^field "pem_keys": entry 1 is an ed25519 key, not an RSA or ECDSA one$/],
    ['a reviewer JWT with a line break', () => ({ token_reviewer_jwt: 'secret-part\nmore' }), /^field "token_reviewer_jwt": must be a bearer token/],
    ['a flag that is no boolean', () => ({ disable_local_ca_jwt: 'perhaps' }), /disable_local_ca_jwt/],
  ])('refuses %s with a 400 naming the field, changing nothing', async (_, body, message) => {
    const method = k8s.mount();
    await method.write('config', { kubernetes_host: 'https://10.0.0.2', token_reviewer_jwt: 'reviewer' });
    const before = await method.read('config');
    const refused = await refusal(method.write('config', body()));
    expect(refused).toEqual({ status: 400, message: expect.stringMatching(message) });
    expect(refused.message).not.toContain('secret-part');
    expect(await method.read('config')).toEqual(before);
  });
});
