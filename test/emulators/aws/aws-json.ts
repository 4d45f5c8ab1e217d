/**
 * The awsJson1_1 protocol that KMS and Secrets Manager speak: `POST /` with
 * `X-Amz-Target: <prefix>.<Action>`, JSON bodies, errors as `{__type, message}` with a status.
 * Every request's SigV4 signature is checked (`sigv4.ts`) for the service in the emulator's region
 * before its action runs.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from '../http-server';
import { verifySigV4, type SigningSecret } from './sigv4';

/** An error the service answers with: `{__type: type, message}` and the status. */
export class AwsJsonError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** The JSON protocol's names for the signature failures `verifySigV4` reports in the query protocol's terms. */
const JSON_SIGNATURE_ERRORS: Record<string, { status: number; type: string }> = {
  SignatureDoesNotMatch: { status: 400, type: 'InvalidSignatureException' },
  RequestExpired: { status: 400, type: 'InvalidSignatureException' },
  InvalidClientTokenId: { status: 400, type: 'UnrecognizedClientException' },
  ExpiredToken: { status: 400, type: 'ExpiredTokenException' },
  IncompleteSignature: { status: 400, type: 'IncompleteSignatureException' },
  MissingAuthenticationToken: { status: 400, type: 'MissingAuthenticationTokenException' },
};

export interface AwsJsonService {
  /** The SigV4 service name (`kms`, `secretsmanager`). */
  service: string;
  /** What precedes the action in `X-Amz-Target` (`TrentService`, `secretsmanager`). */
  targetPrefix: string;
  region: string;
  /** The signing secret of an access key id, if the service accepts it. */
  credentials(accessKeyId: string): SigningSecret | undefined;
  /** Each action's answer to the parsed body; an AwsJsonError thrown is answered as the service would. */
  actions: Record<string, (body: Record<string, unknown>) => unknown>;
  /** Every action served or refused, in order. */
  calls: string[];
  /** An answer that replaces the action's (injected faults, an outage), asked once the signature checked out. */
  intercept?(action: string): { status: number; body: unknown } | undefined;
}

/** The request handler of an awsJson1_1 service. */
export function awsJsonHandler(service: AwsJsonService): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const reply = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, body, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
  const fail = (res: ServerResponse, err: AwsJsonError) => reply(res, err.status, { __type: err.type, message: err.message });
  const prefix = `${service.targetPrefix}.`;
  return async (req, res) => {
    const body = await readBody(req);
    const target = String(req.headers['x-amz-target'] ?? '');
    const action = target.startsWith(prefix) ? target.slice(prefix.length) : '';
    service.calls.push(action);
    const verified = await verifySigV4({ method: req.method ?? 'POST', url: req.url ?? '/', headers: req.headers, body }, (id) => service.credentials(id));
    if (!verified.ok) {
      const mapped = JSON_SIGNATURE_ERRORS[verified.code] ?? { status: verified.status, type: verified.code };
      return fail(res, new AwsJsonError(mapped.status, mapped.type, verified.message));
    }
    if (verified.service !== service.service || verified.region !== service.region) {
      return fail(res, new AwsJsonError(400, 'InvalidSignatureException', `Credential should be scoped to a valid region and service: ${service.service} in '${service.region}', not ${verified.service} in '${verified.region}'.`));
    }
    const intercepted = service.intercept?.(action);
    if (intercepted) return reply(res, intercepted.status, intercepted.body);
    const handler = Object.hasOwn(service.actions, action) ? service.actions[action] : undefined;
    if (req.method !== 'POST' || !handler) return fail(res, new AwsJsonError(400, 'UnknownOperationException', action ? `Unknown operation ${action}` : ''));
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8') || '{}');
    } catch {
      return fail(res, new AwsJsonError(400, 'SerializationException', 'Invalid JSON'));
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return fail(res, new AwsJsonError(400, 'SerializationException', 'Start of structure or map found where not expected.'));
    }
    try {
      reply(res, 200, handler(parsed as Record<string, unknown>));
    } catch (err) {
      if (!(err instanceof AwsJsonError)) throw err;
      fail(res, err);
    }
  };
}
