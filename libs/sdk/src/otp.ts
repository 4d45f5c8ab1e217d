/**
 * The root token of a generate-root attempt travels XORed with the one-time pad given at its start,
 * as base64 without padding (as Vault's): the server encodes it, the operator's client decodes it.
 */
export function encodeOtpToken(token: string, otp: string): string {
  return xor(Buffer.from(token, 'utf8'), otp).toString('base64').replace(/=+$/, '');
}

/** Recovers the token from `encoded_token` and the pad given at the start of the attempt. */
export function decodeOtpToken(encoded: string, otp: string): string {
  return xor(Buffer.from(encoded, 'base64'), otp).toString('utf8');
}

function xor(bytes: Buffer, otp: string): Buffer {
  const pad = Buffer.from(otp, 'utf8');
  if (bytes.length !== pad.length) throw new Error(`the OTP has ${pad.length} characters but the token has ${bytes.length} bytes`);
  return Buffer.from(bytes.map((byte, i) => byte ^ pad[i]));
}
