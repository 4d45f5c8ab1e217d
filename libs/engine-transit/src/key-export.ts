import type { KeyObject } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { ed25519Seed } from './key-material';
import { isAsymmetric } from './key-types';
import type { TransitKey, VersionMaterial } from './transit-key';

export const EXPORT_TYPES = ['encryption-key', 'signing-key', 'hmac-key', 'public-key', 'certificate-chain'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/** Exports that reveal secret material need `exportable`; public keys and chains do not. */
export function exportNeedsExportable(type: ExportType): boolean {
  return type !== 'public-key' && type !== 'certificate-chain';
}

/** One version in the export format of its type (Vault's layouts: base64 raw keys, PEM otherwise). */
export function exportVersion(key: TransitKey, material: VersionMaterial, type: ExportType): string {
  const family = key.spec.family;
  switch (type) {
    case 'encryption-key':
      if (!key.spec.supportsEncryption) throw wrongType(key, type);
      return family === 'rsa' ? privatePem(material, 'pkcs1') : (material.key as Buffer).toString('base64');
    case 'signing-key':
      if (!key.spec.supportsSigning) throw wrongType(key, type);
      if (family === 'ed25519') {
        return Buffer.concat([ed25519Seed(requirePrivate(material)), rawEd25519Public(requirePublic(material))]).toString('base64');
      }
      return privatePem(material, family === 'ecdsa' ? 'sec1' : 'pkcs1');
    case 'hmac-key':
      return (family === 'hmac' ? (material.key as Buffer) : material.hmacKey).toString('base64');
    case 'public-key':
      if (!isAsymmetric(key.spec)) throw wrongType(key, type);
      return publicKeyText(key, material);
    case 'certificate-chain':
      if (!isAsymmetric(key.spec)) throw wrongType(key, type);
      if (!material.certificateChain) {
        throw ServiceError.badRequest(`key version ${material.version} has no certificate chain (set one with set-certificate)`);
      }
      return material.certificateChain;
  }
}

/** The public key as the read endpoint shows it: base64 raw key for Ed25519, PEM SPKI otherwise. */
export function publicKeyText(key: TransitKey, material: VersionMaterial): string {
  const publicKey = requirePublic(material);
  if (key.spec.family === 'ed25519') return rawEd25519Public(publicKey).toString('base64');
  return publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

/** Key material in the import format (raw symmetric bytes, PKCS#8 DER), for BYOK export. */
export function transferMaterial(key: TransitKey, material: VersionMaterial): Buffer {
  if (!isAsymmetric(key.spec)) return material.key as Buffer;
  return requirePrivate(material).export({ type: 'pkcs8', format: 'der' });
}

function rawEd25519Public(publicKey: KeyObject): Buffer {
  return Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
}

function privatePem(material: VersionMaterial, type: 'pkcs1' | 'sec1'): string {
  return requirePrivate(material).export({ type, format: 'pem' }).toString();
}

function requirePrivate(material: VersionMaterial): KeyObject {
  if (!material.privateKey) throw ServiceError.badRequest(`key version ${material.version} holds only a public key`);
  return material.privateKey;
}

function requirePublic(material: VersionMaterial): KeyObject {
  if (!material.publicKey) throw ServiceError.badRequest(`key version ${material.version} has no public key`);
  return material.publicKey;
}

function wrongType(key: TransitKey, type: ExportType): ServiceError {
  return ServiceError.badRequest(`export type ${type} is not supported for key type ${key.spec.name}`);
}
