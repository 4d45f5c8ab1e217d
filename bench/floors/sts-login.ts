import { getCallerIdentity } from '@svc/auth-cloud';
import { readJson, serveFloor } from './serve';

/**
 * Floor for `POST /v1/auth/cloud/login` (iam): the STS round trip alone. It decodes the same login
 * body, forwards the signed GetCallerIdentity to the same emulator with the method's own forwarder,
 * and answers the caller's ARN as JSON. Everything the service does on top (field checks, the role,
 * the bus, the token, its lease and entity in the barrier, the envelope) is what the ratio measures.
 * FLOOR_PROVIDER_URL is the emulator.
 */
const endpoint = new URL(process.env.FLOOR_PROVIDER_URL ?? '');

interface LoginBody {
  iam_request_url: string;
  iam_request_body: string;
  iam_request_headers: string;
}

serveFloor((req, res) => {
  readJson(req)
    .then(async (value) => {
      const body = value as LoginBody;
      const headers = JSON.parse(Buffer.from(body.iam_request_headers, 'base64').toString('utf8')) as Record<string, string[]>;
      const identity = await getCallerIdentity(endpoint, { body: Buffer.from(body.iam_request_body, 'base64').toString('utf8'), headers, host: new URL(Buffer.from(body.iam_request_url, 'base64').toString('utf8')).host }, 1);
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ auth: { metadata: { client_arn: identity.arn, client_user_id: identity.userId, account_id: identity.account } } }));
    })
    .catch((err: Error) => {
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [err.message] }));
    });
});
