import { publicKeyText } from './key-export';
import { isAsymmetric } from './key-types';
import type { TransitKey } from './transit-key';

/**
 * The read response of a key. `keys` maps each version to its creation time in unix seconds; for
 * asymmetric keys (as in Vault) to an object with the creation time, the public key and any
 * certificate chain.
 */
export function describeKey(key: TransitKey): Record<string, unknown> {
  const stored = key.stored;
  const spec = key.spec;
  const asymmetric = isAsymmetric(spec);
  const versions: Record<string, unknown> = {};
  for (const version of key.versionNumbers()) {
    const material = key.material(version);
    versions[String(version)] = asymmetric
      ? {
          creation_time: new Date(material.createdAt).toISOString(),
          name: spec.curve ?? spec.family,
          public_key: material.publicKey ? publicKeyText(key, material) : '',
          certificate_chain: material.certificateChain ?? '',
        }
      : Math.floor(material.createdAt / 1000);
  }
  return {
    name: stored.name,
    type: stored.type,
    deletion_allowed: stored.deletion_allowed,
    derived: stored.derived,
    ...(stored.derived ? { kdf: 'hkdf_sha256' } : {}),
    convergent_encryption: stored.convergent_encryption,
    exportable: stored.exportable,
    allow_plaintext_backup: stored.allow_plaintext_backup,
    keys: versions,
    latest_version: stored.latest_version,
    min_available_version: stored.min_available_version,
    min_decryption_version: stored.min_decryption_version,
    min_encryption_version: stored.min_encryption_version,
    auto_rotate_period: stored.auto_rotate_period,
    ...(spec.family === 'hmac' ? { key_size: stored.key_size } : {}),
    supports_encryption: spec.supportsEncryption,
    supports_decryption: spec.supportsDecryption,
    supports_derivation: spec.supportsDerivation,
    supports_signing: spec.supportsSigning,
    imported: stored.imported,
    ...(stored.imported ? { allow_rotation: stored.allow_rotation } : {}),
  };
}
