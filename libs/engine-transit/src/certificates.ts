import { webcrypto } from 'node:crypto';
import type { Pkcs10CertificateRequest, X509Certificate } from '@peculiar/x509';
import { ServiceError } from '@svc/api-contract';
import { loadX509, type X509 } from '@svc/x509';
import { isAsymmetric } from './key-types';
import type { TransitKey, VersionMaterial } from './transit-key';

const CURVE_HASHES: Record<string, string> = { 'P-256': 'SHA-256', 'P-384': 'SHA-384', 'P-521': 'SHA-512' };

interface WebAlgorithms {
  importAlgorithm: webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm;
  signingAlgorithm: webcrypto.Algorithm | webcrypto.EcdsaParams;
}

function webAlgorithms(key: TransitKey): WebAlgorithms {
  switch (key.spec.family) {
    case 'ed25519':
      return { importAlgorithm: { name: 'Ed25519' }, signingAlgorithm: { name: 'Ed25519' } };
    case 'ecdsa': {
      const curve = key.spec.curve ?? 'P-256';
      return {
        importAlgorithm: { name: 'ECDSA', namedCurve: curve },
        signingAlgorithm: { name: 'ECDSA', hash: CURVE_HASHES[curve] } as webcrypto.EcdsaParams,
      };
    }
    default: {
      const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
      return { importAlgorithm: algorithm, signingAlgorithm: algorithm };
    }
  }
}

function checkCertifiable(key: TransitKey): void {
  if (!isAsymmetric(key.spec)) throw ServiceError.badRequest(`key type ${key.spec.name} cannot have certificates`);
  if (key.stored.derived) throw ServiceError.badRequest('keys with derivation cannot have certificates');
}

/**
 * A PKCS#10 request signed by one key version. The template's subject and extensions (SANs, key
 * usage, ...) are kept; its own key and signature are replaced.
 */
export async function signCsr(key: TransitKey, material: VersionMaterial, templatePem: string): Promise<string> {
  checkCertifiable(key);
  if (!material.privateKey || !material.publicKey) {
    throw ServiceError.badRequest(`key version ${material.version} holds only a public key and cannot sign a CSR`);
  }
  const x509 = await loadX509();
  const template = templatePem.trim() === '' ? undefined : parseTemplate(x509, templatePem);
  const { importAlgorithm, signingAlgorithm } = webAlgorithms(key);
  const privateKey = await webcrypto.subtle.importKey(
    'pkcs8',
    material.privateKey.export({ type: 'pkcs8', format: 'der' }),
    importAlgorithm,
    false,
    ['sign'],
  );
  const publicKey = await webcrypto.subtle.importKey(
    'spki',
    material.publicKey.export({ type: 'spki', format: 'der' }),
    importAlgorithm,
    true,
    ['verify'],
  );
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: template?.subject || undefined,
    extensions: template?.extensions ?? [],
    signingAlgorithm,
    keys: { privateKey, publicKey } as unknown as CryptoKeyPairLike,
  });
  return csr.toString('pem');
}

type CryptoKeyPairLike = Parameters<X509['Pkcs10CertificateRequestGenerator']['create']>[0]['keys'];

function parseTemplate(x509: X509, pem: string): Pkcs10CertificateRequest {
  try {
    return new x509.Pkcs10CertificateRequest(pem);
  } catch {
    throw ServiceError.badRequest('csr is not a PEM certificate signing request');
  }
}

/**
 * Validates a chain for set-certificate: PEM certificates, leaf first, whose leaf carries the key
 * version's public key. Returns the chain re-encoded as PEM. `x509`: loadX509's module.
 */
export function checkCertificateChain(x509: X509, key: TransitKey, material: VersionMaterial, chainPem: string): string {
  checkCertifiable(key);
  let certificates: X509Certificate[];
  try {
    certificates = x509.PemConverter.decode(chainPem).map((der) => new x509.X509Certificate(der));
  } catch {
    throw ServiceError.badRequest('certificate_chain is not a list of PEM certificates');
  }
  if (certificates.length === 0) throw ServiceError.badRequest('certificate_chain holds no PEM certificate');
  const leafKey = Buffer.from(certificates[0].publicKey.rawData);
  const versionKey = material.publicKey?.export({ type: 'spki', format: 'der' });
  if (!versionKey || !leafKey.equals(versionKey)) {
    throw ServiceError.badRequest(`the leaf certificate's public key does not match key version ${material.version}`);
  }
  return certificates.map((certificate) => certificate.toString('pem')).join('\n') + '\n';
}
