import { envelope, ServiceError } from '@svc/api-contract';
import { type FieldData, type PathDeclaration, type Request } from '@svc/framework';
import type { Router } from '../routing/router';
import type { ResponseWrapper } from '../wrapping/response-wrapper';

/** What the wrapping paths use of the core: the response wrapper, and the request's namespace (where a wrapping token lives). */
export interface WrappingPathsDeps {
  wrapping: Pick<ResponseWrapper, 'wrap' | 'unwrap' | 'lookup' | 'rewrap'>;
  router: Pick<Router, 'namespaceOf'>;
}

const TOKEN = { token: { type: 'string' as const, sensitive: true, description: 'Wrapping token; default: the calling token.' } };
const DEFAULT_WRAP_TTL = 300;

/** sys/wrapping: wrap, unwrap, lookup, rewrap. */
export function wrappingPaths(core: WrappingPathsDeps): PathDeclaration[] {
  const tokenOf = (req: Request, f: FieldData): string => {
    const token = f.get<string>('token') || req.caller?.tokenId;
    if (!token) throw ServiceError.badRequest('a wrapping token is required');
    return token;
  };
  return [
    {
      pattern: 'wrapping/wrap',
      synopsis: 'Wraps the given data in a single-use token.',
      acceptsAnyFields: true,
      operations: {
        update: {
          summary: 'Wrap data.',
          handler: async (req, f) => {
            const wrapTtl = req.wrapTtl ?? DEFAULT_WRAP_TTL;
            const info = await core.wrapping.wrap(envelope(req.requestId, { data: f.raw }), wrapTtl, core.router.namespaceOf(req), 'sys/wrapping/wrap');
            return { raw: envelope(req.requestId, { wrap_info: info }) };
          },
        },
      },
    },
    {
      pattern: 'wrapping/unwrap',
      synopsis: 'Returns a wrapped response, once.',
      fields: TOKEN,
      operations: {
        update: {
          summary: 'Unwrap.',
          handler: async (req, f) => {
            const unwrapped = await core.wrapping.unwrap(tokenOf(req, f));
            return { raw: { ...unwrapped, request_id: req.requestId } };
          },
        },
      },
    },
    {
      pattern: 'wrapping/lookup',
      synopsis: 'Properties of a wrapping token, without unwrapping it.',
      fields: TOKEN,
      operations: { update: { summary: 'Look up a wrapping token.', handler: async (req, f) => ({ data: { ...(await core.wrapping.lookup(tokenOf(req, f))) } }) } },
    },
    {
      pattern: 'wrapping/rewrap',
      synopsis: 'Moves a wrapped response to a new wrapping token.',
      fields: TOKEN,
      operations: {
        update: {
          summary: 'Rewrap.',
          handler: async (req, f) => ({ raw: envelope(req.requestId, { wrap_info: await core.wrapping.rewrap(tokenOf(req, f)) }) }),
        },
      },
    },
  ];
}
