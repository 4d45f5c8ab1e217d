import { createPrivateKey, randomBytes, sign, verify, webcrypto, X509Certificate } from 'node:crypto';
import type { Extension, JsonGeneralName } from '@peculiar/x509';
import { loadX509 } from '@svc/x509';

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
/** Cluster certificates outlive any activation; revocation, not expiry, ends a secondary's access. */
const CERT_YEARS = 10;

/** A certificate and its private key, PEM. */
export interface CertifiedKey {
  cert: string;
  key: string;
}

/**
 * The cluster CA of a primary (one per replication mode, made at `primary/enable`): it signs the
 * primary's listener certificate and one client certificate per secondary id, and its key signs
 * the JWT form of activation tokens.
 */
export class ClusterCa {
  private constructor(readonly ca: CertifiedKey) {}

  static async create(clusterId: string): Promise<ClusterCa> {
    const keys = await generateKeys();
    const x509 = await loadX509();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=svc-replication-ca-${clusterId}`,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: yearsFromNow(CERT_YEARS),
      keys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    });
    return new ClusterCa({ cert: cert.toString('pem'), key: await exportKey(keys.privateKey) });
  }

  static load(ca: CertifiedKey): ClusterCa {
    return new ClusterCa(ca);
  }

  /**
   * The primary's listener certificate, for the TLS server name secondaries ask for (the mode's,
   * not a host name: secondaries trust only this CA, so whatever address they dial is checked).
   */
  serverCertificate(serverName: string): Promise<CertifiedKey> {
    return this.issue(serverName, 'serverAuth', [{ type: 'dns', value: serverName }]);
  }

  /** A secondary's client certificate: its common name is the secondary id. */
  clientCertificate(secondaryId: string): Promise<CertifiedKey> {
    return this.issue(secondaryId, 'clientAuth', []);
  }

  /** ES256 signature (JOSE form: r || s) with the CA's key. */
  signJose(data: string): string {
    return sign('sha256', Buffer.from(data), { key: createPrivateKey(this.ca.key), dsaEncoding: 'ieee-p1363' }).toString('base64url');
  }

  verifyJose(data: string, signature: string): boolean {
    const { publicKey } = new X509Certificate(this.ca.cert);
    return verify('sha256', Buffer.from(data), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  }

  private async issue(commonName: string, usage: 'serverAuth' | 'clientAuth', names: JsonGeneralName[]): Promise<CertifiedKey> {
    const x509 = await loadX509();
    const issuer = new x509.X509Certificate(this.ca.cert);
    const caKey = await webcrypto.subtle.importKey('pkcs8', pemBody(this.ca.key), ALGORITHM, false, ['sign']);
    const keys = await generateKeys();
    const extensions: Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage[usage]]),
    ];
    if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${commonName}`,
      issuer: issuer.subject,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: yearsFromNow(CERT_YEARS),
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: ALGORITHM,
      extensions,
    });
    return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
  }
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').trim()}\n-----END PRIVATE KEY-----\n`;
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

/** A positive 128-bit serial (hex), unique per certificate. */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

function yearsFromNow(years: number): Date {
  const date = new Date();
  date.setFullYear(date.getFullYear() + years);
  return date;
}
