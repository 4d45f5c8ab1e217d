import type { FieldData, FieldMap, PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { BATCH_FIELDS, itemInt, itemString, requestItems, runItems, singleItem, type BatchItem } from '../batch';
import { DEFAULT_HASH_ALGORITHM, HASH_ALGORITHMS } from '../hashes';
import { NAME_FIELD, type TransitServices } from '../services';
import {
  MARSHALING_ALGORITHMS,
  NO_HASH,
  SIGNATURE_ALGORITHMS,
  hmac,
  sign,
  verify,
  verifyHmac,
  type SignatureOptions,
} from '../signatures';
import type { TransitKey } from '../transit-key';
import { itemBase64, highestVersion, requireItemBase64 } from './item-inputs';

const SIGN_HASHES = [...HASH_ALGORITHMS, NO_HASH];

const COMMON_FIELDS: FieldMap = {
  name: NAME_FIELD,
  input: { type: 'string', sensitive: true, description: 'Base64 input.' },
  urlalgorithm: { type: 'string', allowed: SIGN_HASHES, description: 'Hash algorithm (in the URL); overrides the fields.' },
  hash_algorithm: { type: 'string', allowed: SIGN_HASHES, description: `Hash algorithm (default ${DEFAULT_HASH_ALGORITHM}).` },
  algorithm: { type: 'string', allowed: SIGN_HASHES, deprecated: true, description: 'Deprecated alias of hash_algorithm.' },
  reference: { type: 'string', description: 'Echoed in the matching batch result item.' },
  ...BATCH_FIELDS,
};

const SIGNATURE_FIELDS: FieldMap = {
  context: { type: 'string', description: 'Base64 context for derived Ed25519 keys.' },
  prehashed: { type: 'bool', default: false, description: 'The input is already a digest (ECDSA, RSA PKCS#1 v1.5).' },
  signature_algorithm: {
    type: 'string',
    default: 'pss',
    allowed: SIGNATURE_ALGORITHMS,
    description: 'RSA signature scheme: pss or pkcs1v15.',
  },
  marshaling_algorithm: {
    type: 'string',
    default: 'asn1',
    allowed: MARSHALING_ALGORITHMS,
    description: 'asn1 (DER, base64) or jws (raw r‖s for ECDSA, base64url).',
  },
  salt_length: { type: 'string', default: 'auto', description: 'RSA-PSS salt length: auto, hash, or a number of bytes.' },
};

const KEY_VERSION_FIELD: FieldMap = {
  key_version: { type: 'int', default: 0, description: 'Key version to use; 0 means the latest.' },
};

const HMAC_ITEM = ['input', 'key_version'];
const SIGN_ITEM = ['input', 'context', 'key_version'];
const VERIFY_ITEM = ['input', 'context', 'signature', 'hmac'];

/** The hash named in the URL, else the fields, else the default. */
function hashAlgorithm(f: FieldData): string {
  for (const name of ['urlalgorithm', 'hash_algorithm', 'algorithm']) if (f.has(name)) return f.get(name);
  return DEFAULT_HASH_ALGORITHM;
}

function signatureOptions(f: FieldData, item: BatchItem): SignatureOptions {
  return {
    hashAlgorithm: hashAlgorithm(f),
    prehashed: f.get('prehashed'),
    signatureAlgorithm: f.get('signature_algorithm'),
    marshaling: f.get('marshaling_algorithm'),
    saltLength: f.get('salt_length'),
    context: itemBase64(item.context, 'context'),
  };
}

const input = (item: BatchItem): Buffer => requireItemBase64(item.input, 'input', 'missing input');

export function signingPaths({ keys, storage }: TransitServices): PathDeclaration[] {
  /** The key, re-validated when the request names a version newer than the cached latest. */
  const keyFor = (f: FieldData, itemFields: string[], versionFields: string[] = []): Promise<TransitKey> => {
    const items = requestItems(f, singleItem(f, itemFields));
    const atLeast = Math.max(0, ...versionFields.map((field) => highestVersion(items, field)));
    return keys.require(storage, f.get('name'), atLeast);
  };

  return [
    {
      pattern: 'hmac/:name/:urlalgorithm?',
      synopsis: 'Computes the HMAC of base64 input with a named key.',
      fields: { ...COMMON_FIELDS, ...KEY_VERSION_FIELD },
      operations: {
        update: {
          summary: 'Generate an HMAC.',
          handler: async (_req, f) => {
            const key = await keyFor(f, HMAC_ITEM);
            const algorithm = hashAlgorithm(f);
            return runItems(f, singleItem(f, HMAC_ITEM), (item) => ({
              hmac: hmac(key, key.writeVersion(itemInt(item.key_version, 'key_version')), input(item), algorithm),
            }));
          },
        },
      },
    },
    {
      pattern: 'sign/:name/:urlalgorithm?',
      synopsis: 'Signs base64 input with a named asymmetric key.',
      fields: { ...COMMON_FIELDS, ...SIGNATURE_FIELDS, ...KEY_VERSION_FIELD },
      operations: {
        update: {
          summary: 'Sign data.',
          handler: async (_req, f) => {
            const key = await keyFor(f, SIGN_ITEM);
            return runItems(f, singleItem(f, SIGN_ITEM), (item) => {
              const version = key.writeVersion(itemInt(item.key_version, 'key_version'));
              return { signature: sign(key, version, input(item), signatureOptions(f, item)), key_version: version };
            });
          },
        },
      },
    },
    {
      pattern: 'verify/:name/:urlalgorithm?',
      synopsis: 'Verifies a signature or an HMAC of base64 input.',
      fields: {
        ...COMMON_FIELDS,
        ...SIGNATURE_FIELDS,
        signature: { type: 'string', description: 'Signature to verify, `svc:v<version>:<base64>`.' },
        hmac: { type: 'string', description: 'HMAC to verify, `svc:v<version>:<base64>`.' },
      },
      operations: {
        update: {
          summary: 'Verify a signature or HMAC.',
          handler: async (_req, f) => {
            const key = await keyFor(f, VERIFY_ITEM, ['signature', 'hmac']);
            return runItems(f, singleItem(f, VERIFY_ITEM), (item) => {
              const signature = itemString(item.signature, 'signature');
              const mac = itemString(item.hmac, 'hmac');
              if (signature && mac) throw ServiceError.badRequest('give either signature or hmac, not both');
              if (mac) return { valid: verifyHmac(key, mac, input(item), hashAlgorithm(f)) };
              if (!signature) throw ServiceError.badRequest('missing signature or hmac to verify');
              return { valid: verify(key, signature, input(item), signatureOptions(f, item)) };
            });
          },
        },
      },
    },
  ];
}
