import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import { pkcs7Document, signedDocument } from './identity-document';
import { PROVIDER_CERTIFICATES } from './provider-certificates';

/** An identity document the provider signed (PKCS#7, DSA over SHA-1), as its documentation publishes one. */
const PROVIDER_SIGNED_PKCS7 = `
MIAGCSqGSIb3DQEHAqCAMIACAQExCzAJBgUrDgMCGgUAMIAGCSqGSIb3DQEHAaCA
JIAEggGmewogICJwcml2YXRlSXAiIDogIjE3Mi4zMC4wLjI1MiIsCiAgImRldnBh
eVByb2R1Y3RDb2RlcyIgOiBudWxsLAogICJhdmFpbGFiaWxpdHlab25lIiA6ICJ1
cy1lYXN0LTFhIiwKICAidmVyc2lvbiIgOiAiMjAxMC0wOC0zMSIsCiAgImluc3Rh
bmNlSWQiIDogImktZjc5ZmU1NmMiLAogICJiaWxsaW5nUHJvZHVjdHMiIDogbnVs
bCwKICAiaW5zdGFuY2VUeXBlIiA6ICJ0Mi5taWNybyIsCiAgImFjY291bnRJZCIg
OiAiMTIxNjU5MDE0MzM0IiwKICAiaW1hZ2VJZCIgOiAiYW1pLWZjZTNjNjk2IiwK
ICAicGVuZGluZ1RpbWUiIDogIjIwMTYtMDQtMDhUMDM6MDE6MzhaIiwKICAiYXJj
aGl0ZWN0dXJlIiA6ICJ4ODZfNjQiLAogICJrZXJuZWxJZCIgOiBudWxsLAogICJy
YW1kaXNrSWQiIDogbnVsbCwKICAicmVnaW9uIiA6ICJ1cy1lYXN0LTEiCn0AAAAA
AAAxggEYMIIBFAIBATBpMFwxCzAJBgNVBAYTAlVTMRkwFwYDVQQIExBXYXNoaW5n
dG9uIFN0YXRlMRAwDgYDVQQHEwdTZWF0dGxlMSAwHgYDVQQKExdBbWF6b24gV2Vi
IFNlcnZpY2VzIExMQwIJAJa6SNnlXhpnMAkGBSsOAwIaBQCgXTAYBgkqhkiG9w0B
CQMxCwYJKoZIhvcNAQcBMBwGCSqGSIb3DQEJBTEPFw0xNjA0MDgwMzAxNDRaMCMG
CSqGSIb3DQEJBDEWBBTuUc28eBXmImAautC+wOjqcFCBVjAJBgcqhkjOOAQDBC8w
LQIVAKA54NxGHWWCz5InboDmY/GHs33nAhQ6O/ZI86NwjA9Vz3RNMUJrUPU5tAAA
AAAAAA==`;

describe("the provider's built-in certificates", () => {
  test('are a DSA certificate for PKCS#7 signatures and an RSA one for detached signatures', () => {
    expect(PROVIDER_CERTIFICATES.pkcs7.map((pem) => new X509Certificate(pem).publicKey.asymmetricKeyType)).toEqual(['dsa']);
    expect(PROVIDER_CERTIFICATES.identity.map((pem) => new X509Certificate(pem).publicKey.asymmetricKeyType)).toEqual(['rsa']);
  });

  test('verify a document the provider signed, and refuse it altered', () => {
    expect(pkcs7Document(PROVIDER_SIGNED_PKCS7, PROVIDER_CERTIFICATES.pkcs7)).toEqual({
      accountId: '121659014334',
      region: 'us-east-1',
      instanceId: 'i-f79fe56c',
      imageId: 'ami-fce3c696',
      pendingTime: '2016-04-08T03:01:38Z',
    });
    const der = Buffer.from(PROVIDER_SIGNED_PKCS7.replace(/\s+/g, ''), 'base64');
    // The last bytes before the end-of-contents octets belong to the signature value.
    const forged = Buffer.from(der);
    forged[forged.length - 13] ^= 1;
    expect(() => pkcs7Document(forged.toString('base64'), PROVIDER_CERTIFICATES.pkcs7)).toThrow(/failed to verify the instance identity document using the PKCS#7 signature/);
  });

  test('do not verify a document signed by anyone else', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const document = Buffer.from(JSON.stringify({ accountId: '123456789012', region: 'us-east-1', instanceId: 'i-0123456789abcdef0', imageId: 'ami-1', pendingTime: '2026-01-01T00:00:00Z' }));
    const signature = sign('sha256', document, privateKey).toString('base64');
    expect(() => signedDocument(document.toString('base64'), signature, PROVIDER_CERTIFICATES.identity)).toThrow(/failed to verify the instance identity document using its signature/);
  });
});
