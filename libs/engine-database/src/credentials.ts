/**
 * Credential types: what each `credential_config` accepts, and how a credential is made. The
 * database sees a password, a public key (`{{public_key}}`) or, for certificates, only the
 * username, which is the certificate's common name.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, webcrypto, X509Certificate, type KeyObject } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { loadX509 } from '@svc/x509';
import type { CredentialType, PluginCredential } from './plugins';
import { renderUsername, TemplateError, type TemplateFields } from '@svc/username-template';

export const CREDENTIAL_TYPES: readonly CredentialType[] = ['password', 'rsa_private_key', 'client_certificate'];

const CONFIG_KEYS: Record<CredentialType, readonly string[]> = {
  password: ['password_policy'],
  rsa_private_key: ['key_bits', 'format'],
  client_certificate: ['common_name_template', 'ca_cert', 'ca_private_key', 'key_type', 'key_bits', 'signature_bits'],
};
const RSA_BITS = ['2048', '3072', '4096'];
const EC_CURVES: Record<string, string> = { '224': 'secp224r1', '256': 'prime256v1', '384': 'secp384r1', '521': 'secp521r1' };
const SIGNATURE_HASHES: Record<string, string> = { '256': 'SHA-256', '384': 'SHA-384', '512': 'SHA-512' };
const WEB_CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

/** Keys the role's reader must never see. */
export const SECRET_CONFIG_KEYS = ['ca_private_key'];

function invalid(message: string): ServiceError {
  return ServiceError.badRequest(`field "credential_config": ${message}`);
}

function oneOf(config: Record<string, string>, key: string, allowed: readonly string[], fallback: string): string {
  const value = config[key] ?? fallback;
  if (!allowed.includes(value)) throw invalid(`"${key}" must be one of ${allowed.join(', ')}`);
  return value;
}

/** Checks `credential_config` for the credential type; returns it with every value a string. */
export function validateCredentialConfig(type: CredentialType, config: Record<string, unknown>): Record<string, string> {
  const strings: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!CONFIG_KEYS[type].includes(key)) throw invalid(`"${key}" does not apply to credential_type ${type}`);
    if (typeof value !== 'string' && typeof value !== 'number') throw invalid(`"${key}" must be a string`);
    strings[key] = String(value);
  }
  if (type === 'rsa_private_key') {
    oneOf(strings, 'key_bits', RSA_BITS, '2048');
    oneOf(strings, 'format', ['pkcs8'], 'pkcs8');
  }
  if (type === 'client_certificate') certificateSettings(strings);
  return strings;
}

interface CertificateSettings {
  keyType: 'rsa' | 'ec' | 'ed25519';
  keyBits: string;
  hash: string;
  commonNameTemplate: string;
  /** The CA's certificate, PEM; its subject is the issuer of the certificates made. */
  caCert: string;
  caKey: KeyObject;
}

function certificateSettings(config: Record<string, string>): CertificateSettings {
  const keyType = oneOf(config, 'key_type', ['rsa', 'ec', 'ed25519'], '') as CertificateSettings['keyType'];
  const keyBits = keyType === 'rsa' ? oneOf(config, 'key_bits', RSA_BITS, '2048') : keyType === 'ec' ? oneOf(config, 'key_bits', Object.keys(EC_CURVES), '256') : '';
  const hash = SIGNATURE_HASHES[oneOf(config, 'signature_bits', Object.keys(SIGNATURE_HASHES), '256')];
  if (!config.ca_cert || !config.ca_private_key) throw invalid('"ca_cert" and "ca_private_key" are required for client_certificate');
  let caKey: KeyObject;
  try {
    new X509Certificate(config.ca_cert);
  } catch {
    throw invalid('"ca_cert" is not a PEM certificate');
  }
  try {
    caKey = createPrivateKey(config.ca_private_key);
  } catch {
    throw invalid('"ca_private_key" is not a PEM private key');
  }
  const commonNameTemplate = config.common_name_template ?? '';
  try {
    renderUsername(commonNameTemplate, { DisplayName: 'token', RoleName: 'role' });
  } catch (err) {
    if (err instanceof TemplateError) throw invalid(`"common_name_template": ${err.message}`);
    throw err;
  }
  return { keyType, keyBits, hash, commonNameTemplate, caCert: config.ca_cert, caKey };
}

export interface IssuedCredential {
  /** The username the credential belongs to (a certificate's common name replaces the generated one). */
  username: string;
  /** What the database is told (`{{password}}`, `{{public_key}}`). */
  plugin: PluginCredential;
  /** What the client receives besides `username`. */
  response: Record<string, string>;
}

export interface IssueContext {
  username: string;
  usernameContext: TemplateFields;
  ttlSeconds: number;
  /** A password under the connection's (or the credential config's) policy. */
  password: (policyName: string) => Promise<string>;
}

export async function issueCredential(type: CredentialType, config: Record<string, string>, context: IssueContext): Promise<IssuedCredential> {
  switch (type) {
    case 'password': {
      const password = await context.password(config.password_policy ?? '');
      return { username: context.username, plugin: { password }, response: { password } };
    }
    case 'rsa_private_key': {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: Number(config.key_bits ?? 2048) });
      return {
        username: context.username,
        plugin: { publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
        response: { rsa_private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
      };
    }
    case 'client_certificate':
      return issueCertificate(certificateSettings(config), context);
  }
}

function leafKeyPair(settings: CertificateSettings): { publicKey: KeyObject; privateKey: KeyObject } {
  switch (settings.keyType) {
    case 'rsa':
      return generateKeyPairSync('rsa', { modulusLength: Number(settings.keyBits) });
    case 'ec':
      return generateKeyPairSync('ec', { namedCurve: EC_CURVES[settings.keyBits] });
    case 'ed25519':
      return generateKeyPairSync('ed25519');
  }
}

/** The WebCrypto form of the CA's key, which @peculiar/x509 signs with. */
async function caSigningKey(settings: CertificateSettings): Promise<{ key: webcrypto.CryptoKey; algorithm: webcrypto.Algorithm | webcrypto.EcdsaParams }> {
  const der = settings.caKey.export({ type: 'pkcs8', format: 'der' });
  const type = settings.caKey.asymmetricKeyType;
  let algorithm: webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm;
  let signing: webcrypto.Algorithm | webcrypto.EcdsaParams;
  if (type === 'rsa') {
    algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: settings.hash };
    signing = algorithm;
  } else if (type === 'ec') {
    const curve = WEB_CURVES[settings.caKey.asymmetricKeyDetails?.namedCurve ?? ''];
    if (!curve) throw invalid('"ca_private_key" uses an elliptic curve this service cannot sign with (use P-256, P-384 or P-521)');
    algorithm = { name: 'ECDSA', namedCurve: curve };
    signing = { name: 'ECDSA', hash: settings.hash } as webcrypto.EcdsaParams;
  } else if (type === 'ed25519') {
    algorithm = { name: 'Ed25519' };
    signing = algorithm;
  } else {
    throw invalid(`"ca_private_key" of type ${type ?? 'unknown'} is not supported`);
  }
  return { key: await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']), algorithm: signing };
}

async function issueCertificate(settings: CertificateSettings, context: IssueContext): Promise<IssuedCredential> {
  const commonName = settings.commonNameTemplate ? renderUsername(settings.commonNameTemplate, context.usernameContext) : context.username;
  const { publicKey, privateKey } = leafKeyPair(settings);
  const signer = await caSigningKey(settings);
  const x509 = await loadX509();
  const now = new Date();
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(16).toString('hex').replace(/^[89a-f]/, '1'),
    subject: [{ CN: [commonName] }],
    issuer: new x509.X509Certificate(settings.caCert).subject,
    notBefore: new Date(now.getTime() - 30_000), // tolerate clock skew with the database
    notAfter: new Date(now.getTime() + context.ttlSeconds * 1000),
    publicKey: new Uint8Array(publicKey.export({ type: 'spki', format: 'der' })),
    signingKey: signer.key,
    signingAlgorithm: signer.algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
    ],
  });
  return {
    username: commonName,
    plugin: {},
    response: {
      client_certificate: certificate.toString('pem'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      private_key_type: settings.keyType,
    },
  };
}
