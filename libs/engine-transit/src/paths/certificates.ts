import type { PathDeclaration } from '@svc/framework';
import { loadX509 } from '@svc/x509';
import { checkCertificateChain, signCsr } from '../certificates';
import { NAME_FIELD, type TransitServices } from '../services';
import { TransitKey } from '../transit-key';

const VERSION_FIELD = {
  type: 'string',
  default: '',
  description: 'Key version; empty or `latest` means the current version.',
} as const;

export function certificatePaths({ keys, storage }: TransitServices): PathDeclaration[] {
  return [
    {
      pattern: 'keys/:name/csr',
      synopsis: 'Signs a PKCS#10 certificate signing request with the key.',
      fields: {
        name: NAME_FIELD,
        version: VERSION_FIELD,
        csr: { type: 'string', default: '', description: 'PEM CSR used as a template (subject, extensions); empty for an empty CSR.' },
      },
      operations: {
        update: {
          summary: 'Create a CSR.',
          handler: async (_req, f) => {
            const key = await keys.require(storage, f.get('name'));
            const version = key.versionFromText(f.get('version'));
            const csr = await signCsr(key, key.material(version), f.get('csr'));
            return { data: { name: key.name, type: key.spec.name, version, csr } };
          },
        },
      },
    },
    {
      pattern: 'keys/:name/set-certificate',
      synopsis: 'Sets the certificate chain of a key version, leaf first; the leaf must certify the key.',
      fields: {
        name: NAME_FIELD,
        version: VERSION_FIELD,
        certificate_chain: { type: 'string', required: true, description: 'Concatenated PEM certificates, end-entity first.' },
      },
      operations: {
        update: {
          summary: 'Set the certificate chain.',
          handler: async (_req, f) => {
            const current = await keys.require(storage, f.get('name'));
            const version = current.versionFromText(f.get('version'));
            const x509 = await loadX509();
            const chain = checkCertificateChain(x509, current, current.material(version), f.get('certificate_chain'));
            await keys.update(storage, current.name, (stored) => {
              // Validate against the stored version too: it may have changed since the cached read.
              const fresh = new TransitKey(stored);
              checkCertificateChain(x509, fresh, fresh.material(version), chain);
              const entry = { ...stored.versions[String(version)], certificate_chain: chain };
              return { ...stored, versions: { ...stored.versions, [String(version)]: entry } };
            });
            return undefined;
          },
        },
      },
    },
  ];
}
