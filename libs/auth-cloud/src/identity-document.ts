/**
 * Instance identity documents and their signatures: PKCS#7 SignedData (parsed with pkijs, which
 * reads the provider's BER, indefinite lengths and constructed OCTET STRINGs included) and the
 * document with its detached RSA-SHA256 signature. Signatures are checked with node:crypto against
 * the registered certificates, so both the RSA and the legacy DSA certificates verify.
 */
import { createHash, verify, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ServiceError } from '@svc/api-contract';

/** The fields of an identity document a login uses. */
export interface IdentityDocument {
  accountId: string;
  region: string;
  instanceId: string;
  imageId: string;
  pendingTime: string;
}

const DIGESTS: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';

function base64(name: string, value: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  const bytes = Buffer.from(compact, 'base64');
  if (!compact || bytes.toString('base64').replace(/=+$/, '') !== compact.replace(/=+$/, '')) throw ServiceError.badRequest(`field "${name}": not base64`);
  return bytes;
}

function parsedDocument(bytes: Buffer, field: string): IdentityDocument {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw ServiceError.badRequest(`field "${field}": the signed content is not an identity document`);
  }
  const text = (name: string) => (typeof parsed[name] === 'string' ? (parsed[name] as string) : '');
  const document = { accountId: text('accountId'), region: text('region'), instanceId: text('instanceId'), imageId: text('imageId'), pendingTime: text('pendingTime') };
  if (!document.instanceId || !document.accountId || !document.region) throw ServiceError.badRequest(`field "${field}": the identity document has no instanceId, accountId or region`);
  return document;
}

function verifiedBy(certificates: readonly string[], digest: string, data: Buffer, signature: Buffer): boolean {
  return certificates.some((pem) => {
    try {
      return verify(digest, data, new X509Certificate(pem).publicKey, signature);
    } catch {
      return false;
    }
  });
}

/** The document a PKCS#7 signature (base64 DER or BER, no PEM armour) carries, once a certificate verifies it. */
export function pkcs7Document(pkcs7: string, certificates: readonly string[]): IdentityDocument {
  const der = base64('pkcs7', pkcs7);
  let signed: pkijs.SignedData;
  try {
    const info = pkijs.ContentInfo.fromBER(der);
    if (info.contentType !== pkijs.id_ContentType_SignedData) throw new Error('not SignedData');
    signed = new pkijs.SignedData({ schema: info.content });
  } catch {
    throw ServiceError.badRequest('field "pkcs7": not a PKCS#7 signature');
  }
  const eContent = signed.encapContentInfo.eContent;
  const signer = signed.signerInfos[0];
  if (!eContent || !signer) throw ServiceError.badRequest('field "pkcs7": the signature carries no content or no signer');
  const content = Buffer.from(eContent.getValue());
  const digest = DIGESTS[signer.digestAlgorithm.algorithmId];
  if (!digest) throw ServiceError.badRequest(`field "pkcs7": unsupported digest algorithm ${signer.digestAlgorithm.algorithmId}`);
  let data = content;
  if (signer.signedAttrs) {
    const attribute = signer.signedAttrs.attributes.find((candidate) => candidate.type === MESSAGE_DIGEST);
    const declared = attribute?.values[0] instanceof asn1js.OctetString ? Buffer.from(attribute.values[0].getValue()) : undefined;
    if (!declared?.equals(createHash(digest).update(content).digest())) throw ServiceError.badRequest('failed to verify the instance identity document using the PKCS#7 signature');
    // The signature covers the attributes as a SET, not as the [0] they are tagged with inside SignerInfo.
    data = Buffer.from(signer.signedAttrs.encodedValue);
    data[0] = 0x31;
  }
  if (!verifiedBy(certificates, digest, data, Buffer.from(signer.signature.getValue()))) {
    throw ServiceError.badRequest('failed to verify the instance identity document using the PKCS#7 signature');
  }
  return parsedDocument(content, 'pkcs7');
}

/** The document `identity` (base64) once its RSA-SHA256 `signature` verifies with one of the certificates. */
export function signedDocument(identity: string, signature: string, certificates: readonly string[]): IdentityDocument {
  const document = base64('identity', identity);
  if (!verifiedBy(certificates, 'sha256', document, base64('signature', signature))) {
    throw ServiceError.badRequest('failed to verify the instance identity document using its signature');
  }
  return parsedDocument(document, 'identity');
}
