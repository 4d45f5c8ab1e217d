import { createCipheriv, randomBytes } from 'node:crypto';
import { readJson, serveFloor } from './serve';

/**
 * Floor for `POST /v1/transit/encrypt/:name`: what transit must do per request and nothing more —
 * check the token, parse the JSON body, decode the base64 plaintext, seal it with AES-256-GCM under
 * a fresh nonce, encode nonce ‖ ciphertext ‖ tag as base64 and reply with JSON. Everything the
 * service does on top (routing, ACL, dispatch, field handling, envelope) is what the ratio measures.
 */
const tokens = new Set(['bench-root']);
const key = randomBytes(32);
/** Nonces cut from one CSPRNG draw per 1,024, as transit does. */
let noncePool = randomBytes(12 * 1024);
let nonceOffset = 0;

function freshNonce(): Buffer {
  if (nonceOffset === noncePool.length) {
    noncePool = randomBytes(noncePool.length);
    nonceOffset = 0;
  }
  nonceOffset += 12;
  return noncePool.subarray(nonceOffset - 12, nonceOffset);
}

function seal(plaintext: Buffer): string {
  const nonce = freshNonce();
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = cipher.update(plaintext);
  cipher.final();
  return `svc:v1:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64')}`;
}

serveFloor((req, res) => {
  const token = req.headers['x-service-token'];
  if (typeof token !== 'string' || !tokens.has(token)) {
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"errors":["permission denied"]}');
    return;
  }
  readJson(req).then(
    (body) => {
      const plaintext = (body as { plaintext?: unknown }).plaintext;
      if (typeof plaintext !== 'string') {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"errors":["missing plaintext to encrypt"]}');
        return;
      }
      const ciphertext = seal(Buffer.from(plaintext, 'base64'));
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ data: { ciphertext, key_version: 1 } }));
    },
    () => res.writeHead(400, { 'content-type': 'application/json' }).end('{"errors":["malformed JSON"]}'),
  );
});
