/**
 * An S3 emulator: s3rver (the S3 REST-XML API over a temporary directory) behind the shared SigV4
 * check, which s3rver does not make itself (it only looks the access key id up). Every request
 * must be signed for the `s3` service in the emulator's region by a key `credentials` holds;
 * then it is passed on to s3rver unsigned. Refusals are S3's XML errors: an unknown key is 403
 * InvalidAccessKeyId, a wrong secret 403 SignatureDoesNotMatch, another region 400
 * AuthorizationHeaderMalformed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import S3rver from 's3rver';
import { listenLocally, readBody } from '../http-server';
import { verifySigV4, type SigningSecret } from './sigv4';

export interface S3Emulator {
  /** What a client's endpoint is set to (path-style addressing). */
  url: string;
  region: string;
  /** Access key id → secret S3 accepts. */
  credentials: Map<string, SigningSecret>;
  createCredentials(): { accessKeyId: string; secretAccessKey: string };
  /**
   * Every request as `METHOD /path OUTCOME` (the signature check's), in order; an accepted request
   * asking for server-side encryption ends in `sse=AES256` or `sse=aws:kms:KEY` (s3rver ignores it).
   */
  calls: string[];
  close(): Promise<void>;
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escape(message)}</Message><RequestId>${randomBytes(8).toString('hex')}</RequestId></Error>`);
}

export async function startS3Emulator(region = 'us-east-1'): Promise<S3Emulator> {
  const directory = mkdtempSync(path.join(tmpdir(), 'svc-s3-'));
  const s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, resetOnClose: true, vhostBuckets: false });
  const behind = await s3rver.run();
  const credentials = new Map<string, SigningSecret>();
  const calls: string[] = [];

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const headers = { ...req.headers };
      // s3rver would look the caller's key up in its own single account: the check is done here.
      delete headers.authorization;
      delete headers['x-amz-security-token'];
      const upstream = request({ host: behind.address, port: behind.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res).on('finish', resolve).on('error', reject);
      });
      upstream.on('error', reject);
      upstream.end(body);
    });

  const server = await listenLocally(async (req, res) => {
    const body = await readBody(req);
    const verified = await verifySigV4({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body }, (id) => credentials.get(id));
    const where = `${req.method} ${new URL(req.url ?? '/', 'http://emulator').pathname}`;
    if (!verified.ok) {
      calls.push(`${where} ${verified.code}`);
      if (verified.code === 'InvalidClientTokenId') return sendError(res, 403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
      return sendError(res, verified.status, verified.code, verified.message);
    }
    if (verified.service !== 's3' || verified.region !== region) {
      calls.push(`${where} AuthorizationHeaderMalformed`);
      return sendError(res, 400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; the region '${verified.region}' is wrong; expecting '${region}'`);
    }
    const sse = req.headers['x-amz-server-side-encryption'];
    const kmsKey = req.headers['x-amz-server-side-encryption-aws-kms-key-id'];
    calls.push(`${where} ok${sse ? ` sse=${sse}${kmsKey ? `:${kmsKey}` : ''}` : ''}`);
    await forward(req, res, body);
  });

  return {
    url: server.url,
    region,
    credentials,
    calls,
    createCredentials() {
      const accessKeyId = `AKIA${randomBytes(8).toString('hex').toUpperCase()}`;
      const secretAccessKey = randomBytes(30).toString('base64');
      credentials.set(accessKeyId, { secretAccessKey });
      return { accessKeyId, secretAccessKey };
    },
    async close() {
      await server.close();
      await s3rver.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
