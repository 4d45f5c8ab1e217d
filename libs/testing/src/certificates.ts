import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** PEM files of a certificate and its key. */
export interface CertificateFiles {
  cert: string;
  key: string;
}

/** A private CA made for one test (openssl, P-256, valid a day): its certificate, and certificates it issues. */
export interface TestCa {
  /** The CA certificate (PEM file), what a client trusts. */
  caCert: string;
  /** A certificate for `names` (DNS names or IP addresses), good for servers and clients. */
  issue(name: string, names: string[]): CertificateFiles;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export function createTestCa(dir: string, commonName: string): TestCa {
  mkdirSync(dir, { recursive: true });
  const file = (name: string) => path.join(dir, name);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  openssl(['req', '-x509', ...EC_KEY, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '1', '-subj', `/CN=${commonName}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return {
    caCert: file('ca.pem'),
    issue: (name, names) => {
      const alternatives = names.map((entry) => (/^[\d.]+$|:/.test(entry) ? `IP:${entry}` : `DNS:${entry}`)).join(',');
      writeFileSync(file(`${name}.ext`), `basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${alternatives}\n`);
      openssl(['req', ...EC_KEY, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`), '-subj', `/CN=${name}`]);
      openssl(['x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1',
        '-extfile', file(`${name}.ext`), '-out', file(`${name}.pem`)]);
      return { cert: file(`${name}.pem`), key: file(`${name}.key`) };
    },
  };
}
