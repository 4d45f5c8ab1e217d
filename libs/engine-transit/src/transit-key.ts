import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { deriveBytes, ed25519FromSeed, ed25519Seed } from './key-material';
import { keyTypeSpec, type KeyTypeSpec } from './key-types';
import type { StoredKey } from './stored-key';

/** One version's key material, decoded once and kept with the cached key. */
export interface VersionMaterial {
  version: number;
  /** Unix milliseconds. */
  createdAt: number;
  /** AEAD key or HMAC-type key. */
  key?: Buffer;
  hmacKey: Buffer;
  privateKey?: KeyObject;
  publicKey?: KeyObject;
  certificateChain?: string;
}

/**
 * A stored key ready for use: versions are decoded lazily and memoized, so the hot path of encrypt
 * does no base64 or PEM parsing. Instances are immutable views of one stored revision; any write
 * replaces the instance.
 */
export class TransitKey {
  readonly spec: KeyTypeSpec;
  private readonly materials = new Map<number, VersionMaterial>();

  constructor(readonly stored: Readonly<StoredKey>) {
    this.spec = keyTypeSpec(stored.type);
  }

  get name(): string {
    return this.stored.name;
  }

  get latestVersion(): number {
    return this.stored.latest_version;
  }

  /** Versions still held (not trimmed), ascending. */
  versionNumbers(): number[] {
    return Object.keys(this.stored.versions)
      .map(Number)
      .sort((a, b) => a - b);
  }

  material(version: number): VersionMaterial {
    let material = this.materials.get(version);
    if (!material) {
      const stored = this.stored.versions[String(version)];
      if (!stored) throw ServiceError.badRequest(`key version ${version} does not exist or has been trimmed`);
      material = {
        version,
        createdAt: stored.creation_time,
        key: stored.key === undefined ? undefined : Buffer.from(stored.key, 'base64'),
        hmacKey: Buffer.from(stored.hmac_key, 'base64'),
        privateKey: stored.private_key
          ? createPrivateKey({ key: Buffer.from(stored.private_key, 'base64'), format: 'der', type: 'pkcs8' })
          : undefined,
        publicKey: stored.public_key
          ? createPublicKey({ key: Buffer.from(stored.public_key, 'base64'), format: 'der', type: 'spki' })
          : undefined,
        certificateChain: stored.certificate_chain,
      };
      this.materials.set(version, material);
    }
    return material;
  }

  /** A version named in a URL or field: empty or `latest` is the latest; it must still be held. */
  versionFromText(text: string | undefined): number {
    if (text === undefined || text === '' || text === 'latest') return this.latestVersion;
    const version = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
    if (Number.isNaN(version) || this.stored.versions[String(version)] === undefined) {
      throw ServiceError.badRequest(`version "${text}" does not exist or has been trimmed`);
    }
    return version;
  }

  /** The version that encrypts, signs or HMACs: 0 means the latest; min_encryption_version applies. */
  writeVersion(requested: number): number {
    if (requested < 0) throw ServiceError.badRequest('key_version cannot be negative');
    const version = requested === 0 ? this.latestVersion : requested;
    if (version > this.latestVersion) {
      throw ServiceError.badRequest('requested key_version is higher than the latest key version');
    }
    const minimum = this.stored.min_encryption_version;
    if (minimum > 0 && version < minimum) {
      throw ServiceError.badRequest('requested key_version is below the minimum encryption version of the key');
    }
    return version;
  }

  /** Refuses ciphertext, signatures and HMACs outside [min_decryption_version, latest]. */
  checkReadVersion(version: number): void {
    if (version < this.stored.min_decryption_version) {
      throw ServiceError.badRequest('version is disallowed by the key policy (older than min_decryption_version)');
    }
    if (version > this.latestVersion) throw ServiceError.badRequest('version is newer than the latest key version');
  }

  /** The derivation context a derived key requires (ignored by keys without derivation). */
  derivationContext(context: Buffer | undefined): Buffer | undefined {
    if (!this.stored.derived) return undefined;
    if (!context || context.length === 0) {
      throw ServiceError.badRequest('missing context: this key uses key derivation, so every request must carry a context');
    }
    return context;
  }

  /** The symmetric key of a version, derived for the context when the key is derived. */
  symmetricKey(material: VersionMaterial, context: Buffer | undefined): Buffer {
    const key = material.key;
    if (!key) throw ServiceError.badRequest(`key type ${this.spec.name} has no symmetric key`);
    const derivation = this.derivationContext(context);
    return derivation ? deriveBytes(key, derivation, key.length) : key;
  }

  /** The private signing key of a version; Ed25519 keys with derivation get one per context. */
  signingKey(material: VersionMaterial, context: Buffer | undefined): KeyObject {
    if (!material.privateKey) {
      throw ServiceError.badRequest(`key "${this.name}" version ${material.version} holds only a public key`);
    }
    const derivation = this.derivationContext(context);
    if (!derivation) return material.privateKey;
    return ed25519FromSeed(deriveBytes(ed25519Seed(material.privateKey), derivation, 32));
  }

  /** The public key that verifies signatures of a version (per context for derived Ed25519 keys). */
  verifyingKey(material: VersionMaterial, context: Buffer | undefined): KeyObject {
    if (this.stored.derived) return createPublicKey(this.signingKey(material, context));
    if (!material.publicKey) throw ServiceError.badRequest(`key type ${this.spec.name} has no public key`);
    return material.publicKey;
  }
}
