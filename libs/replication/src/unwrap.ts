import { readdir, readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import * as path from 'node:path';
import { ServiceError } from '@svc/api-contract';

const UNWRAP_TIMEOUT_MS = 15_000;

/** `ca_file` and `ca_path` of secondary/enable and update-primary: PEM roots for the primary's API; none means the system's. */
export async function loadCaBundle(caFile: string, caPath: string): Promise<string[] | undefined> {
  const pems: string[] = [];
  const read = async (file: string, field: string) => {
    try {
      pems.push(await readFile(file, 'utf8'));
    } catch {
      throw ServiceError.badRequest(`${field}: cannot read "${file}"`);
    }
  };
  if (caFile) await read(caFile, 'ca_file');
  if (caPath) {
    let names: string[];
    try {
      names = await readdir(caPath);
    } catch {
      throw ServiceError.badRequest(`ca_path: cannot read the directory "${caPath}"`);
    }
    for (const name of names.filter((entry) => entry.endsWith('.pem') || entry.endsWith('.crt'))) await read(path.join(caPath, name), 'ca_path');
  }
  if (pems.some((pem) => !pem.includes('-----BEGIN CERTIFICATE-----'))) throw ServiceError.badRequest('ca_file and ca_path must hold PEM certificates');
  return pems.length > 0 ? pems : undefined;
}

/**
 * Unwraps an activation token at the primary's `sys/wrapping/unwrap` (the token authenticates the
 * call), checking an https primary's certificate against `ca` (or the system roots).
 */
export async function unwrapAtPrimary(apiAddr: string, token: string, ca: string[] | undefined): Promise<unknown> {
  let url: URL;
  try {
    url = new URL('/v1/sys/wrapping/unwrap', apiAddr);
  } catch {
    throw ServiceError.badRequest(`primary_api_addr "${apiAddr}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw ServiceError.badRequest(`primary_api_addr "${apiAddr}" must be an http or https URL`);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = send(url, { method: 'POST', headers: { 'x-service-token': token, 'content-type': 'application/json' }, timeout: UNWRAP_TIMEOUT_MS, ...(ca ? { ca } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end('{}');
  }).catch((err: Error) => {
    throw ServiceError.badRequest(`could not reach the primary at ${url.origin} to unwrap the activation token: ${err.message}`);
  });
  if (status !== 200) {
    throw ServiceError.badRequest(`the primary at ${url.origin} refused the activation token (status ${status}): it is invalid, expired or already used`);
  }
  try {
    return (JSON.parse(body) as { data?: unknown }).data;
  } catch {
    throw ServiceError.badRequest(`the primary at ${url.origin} answered the unwrap with something other than JSON`);
  }
}
