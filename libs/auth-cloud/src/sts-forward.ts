/**
 * Forwards a client's signed sts:GetCallerIdentity request to STS, as Vault's iam login does: the
 * request goes out exactly as signed (method, body, headers, with `Host` the signed URL's host, not
 * the endpoint's), without following redirects, and only a 200 `text/xml` answer is believed.
 */
import { parseXML } from '@aws-sdk/xml-builder';
import { ANSWER_TIMEOUT_MS } from '@svc/cloud-provider';
import { exchange, ServiceError } from '@svc/api-contract';

export interface CallerIdentity {
  arn: string;
  userId: string;
  account: string;
}

export interface SignedCall {
  body: string;
  /** Header name → values, as the client sent them. */
  headers: Record<string, string[]>;
  /** Host of the URL the client signed. */
  host: string;
}

interface XmlNode {
  [name: string]: XmlNode | string | undefined;
}

async function send(endpoint: URL, call: SignedCall): Promise<{ status: number; contentType: string; body: string }> {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(call.headers)) headers[name] = values.join(',');
  headers.host = call.host;
  const answer = await exchange(new URL(endpoint.pathname, endpoint), { method: 'POST', headers, body: call.body, deadlineMs: ANSWER_TIMEOUT_MS });
  return { status: answer.status, contentType: String(answer.headers['content-type'] ?? ''), body: answer.body.toString('utf8') };
}

function child(node: unknown, name: string): XmlNode | undefined {
  const value = (node as XmlNode | undefined)?.[name];
  return typeof value === 'object' ? value : undefined;
}

function text(node: XmlNode | undefined, name: string): string {
  const value = node?.[name];
  return typeof value === 'string' ? value : '';
}

/** Calls STS; `attempts` tries while STS does not answer or answers 5xx. A refusal is a 400 naming STS's code; no answer a 502. */
export async function getCallerIdentity(endpoint: URL, call: SignedCall, attempts: number): Promise<CallerIdentity> {
  let failure = '';
  for (let attempt = 0; attempt < attempts; attempt++) {
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send(endpoint, call);
    } catch (err) {
      failure = `STS did not answer: ${(err as Error).message}`;
      continue;
    }
    if (answer.status >= 500) {
      failure = `STS answered ${answer.status}`;
      continue;
    }
    if (answer.status !== 200) {
      const error = child(child(parseXmlSafely(answer.body), 'ErrorResponse'), 'Error');
      throw ServiceError.badRequest(`error making upstream request: STS answered ${answer.status}: ${text(error, 'Code') || 'unknown'}: ${text(error, 'Message')}`);
    }
    if (!answer.contentType.startsWith('text/xml')) throw ServiceError.badGateway(`STS answered with content type "${answer.contentType}", not text/xml`);
    const result = child(child(parseXmlSafely(answer.body), 'GetCallerIdentityResponse'), 'GetCallerIdentityResult');
    const identity = { arn: text(result, 'Arn'), userId: text(result, 'UserId'), account: text(result, 'Account') };
    if (!identity.arn || !identity.userId || !identity.account) throw ServiceError.badGateway('STS answered without a caller identity');
    return identity;
  }
  throw ServiceError.badGateway(`error making upstream request: ${failure}`);
}

function parseXmlSafely(body: string): unknown {
  try {
    return parseXML(body);
  } catch {
    return {};
  }
}
