import { createHash, randomBytes } from 'node:crypto';
import type { PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { decodeBase64 } from '../encoding';
import { encrypt } from '../encryption';
import { DEFAULT_HASH_ALGORITHM, HASH_ALGORITHMS, opensslDigest } from '../hashes';
import { NAME_FIELD, type TransitServices } from '../services';
import { cipherOptions } from './item-inputs';

const RANDOM_SOURCES = ['platform', 'seal', 'all'];
const MAX_RANDOM_BYTES = 128 * 1024;
const OUTPUT_FORMATS = ['base64', 'hex'];

const RANDOM_FIELDS = {
  urlbytes: { type: 'string', description: 'Number of bytes (in the URL), or the source when only one segment is given.' },
  source: { type: 'string', default: 'platform', allowed: RANDOM_SOURCES, description: 'Entropy source; all draw on the platform CSPRNG here.' },
  bytes: { type: 'int', default: 32, description: `Number of random bytes, 1 to ${MAX_RANDOM_BYTES}.` },
  format: { type: 'string', default: 'base64', allowed: OUTPUT_FORMATS, description: 'Output encoding.' },
} as const;

/**
 * Random bytes and hashes, which Vault serves both here and as sys/tools/ (`prefix` "tools/"):
 * one declaration for both.
 */
export function toolPaths(prefix = ''): PathDeclaration[] {
  const randomDeclaration = (pattern: string): PathDeclaration => ({
    pattern: prefix + pattern,
    synopsis: 'Returns random bytes.',
    fields: RANDOM_FIELDS,
    operations: {
      update: {
        summary: 'Generate random bytes.',
        handler: async (_req, f) => {
          let bytes = f.get<number>('bytes');
          const segment = f.params.urlbytes;
          if (segment !== undefined && /^\d+$/.test(segment)) bytes = Number(segment);
          else if (segment !== undefined && !RANDOM_SOURCES.includes(segment)) {
            throw ServiceError.badRequest(`"${segment}" is neither a number of bytes nor a source (${RANDOM_SOURCES.join(', ')})`);
          }
          if (bytes < 1 || bytes > MAX_RANDOM_BYTES) {
            throw ServiceError.badRequest(`bytes must be between 1 and ${MAX_RANDOM_BYTES}`);
          }
          return { data: { random_bytes: randomBytes(bytes).toString(f.get<'base64' | 'hex'>('format')) } };
        },
      },
    },
  });

  return [
    randomDeclaration('random/:source/:urlbytes'),
    randomDeclaration('random/:urlbytes?'),
    {
      pattern: `${prefix}hash/:urlalgorithm?`,
      synopsis: 'Hashes base64 input.',
      fields: {
        urlalgorithm: { type: 'string', allowed: HASH_ALGORITHMS, description: 'Hash algorithm (in the URL).' },
        algorithm: { type: 'string', default: DEFAULT_HASH_ALGORITHM, allowed: HASH_ALGORITHMS, description: 'Hash algorithm.' },
        input: { type: 'string', required: true, sensitive: true, description: 'Base64 input to hash.' },
        format: { type: 'string', default: 'hex', allowed: OUTPUT_FORMATS, description: 'Output encoding.' },
      },
      operations: {
        update: {
          summary: 'Hash data.',
          handler: async (_req, f) => {
            const algorithm = f.has('urlalgorithm') ? f.get<string>('urlalgorithm') : f.get<string>('algorithm');
            const sum = createHash(opensslDigest(algorithm))
              .update(decodeBase64(f.get('input'), 'input'))
              .digest(f.get<'base64' | 'hex'>('format'));
            return { data: { sum } };
          },
        },
      },
    },
  ];
}

export function generatePaths({ keys, storage }: TransitServices): PathDeclaration[] {
  return [
    ...toolPaths(),
    {
      pattern: 'datakey/:type/:name',
      synopsis: 'Generates a data key encrypted with a named key; `plaintext` also returns it in the clear.',
      fields: {
        name: NAME_FIELD,
        type: { type: 'string', allowed: ['plaintext', 'wrapped'], description: '`plaintext` or `wrapped` (in the URL).' },
        context: { type: 'string', description: 'Base64 context for key derivation.' },
        nonce: { type: 'string', description: 'Base64 12-byte nonce (convergent encryption keys only).' },
        bits: { type: 'int', default: 256, description: 'Size of the data key: 128, 256 or 512 bits.' },
        key_version: { type: 'int', default: 0, description: 'Key version to encrypt with; 0 means the latest.' },
      },
      operations: {
        update: {
          summary: 'Generate a data key.',
          handler: async (_req, f) => {
            const bits = f.get<number>('bits');
            if (![128, 256, 512].includes(bits)) throw ServiceError.badRequest('bits must be 128, 256 or 512');
            const key = await keys.require(storage, f.get('name'));
            const version = key.writeVersion(f.get('key_version'));
            const dataKey = randomBytes(bits / 8);
            const options = cipherOptions({ context: f.get('context'), nonce: f.get('nonce') });
            const data: Record<string, unknown> = { ciphertext: encrypt(key, version, dataKey, options), key_version: version };
            if (f.get('type') === 'plaintext') data.plaintext = dataKey.toString('base64');
            return { data };
          },
        },
      },
    },
  ];
}
