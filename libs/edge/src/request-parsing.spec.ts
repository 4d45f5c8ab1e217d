import { DEFAULT_JSON_LIMITS } from '@svc/config';
import { ServiceError } from '@svc/api-contract';
import type { HttpRequest } from './exchange';
import { header, wrapTtlFrom } from './request-parsing';

function request(headers: HttpRequest['headers']): HttpRequest {
  return { method: 'POST', url: '/v1/sys/wrapping/wrap', headers, body: undefined, requireRequestHeader: false, jsonLimits: DEFAULT_JSON_LIMITS };
}

describe('the logical request from HTTP headers', () => {
  it('takes the wrap TTL from X-Service-Wrap-TTL, in seconds', () => {
    expect(wrapTtlFrom(request({ 'x-service-wrap-ttl': '90m' }))).toBe(5400);
    expect(wrapTtlFrom(request({ 'x-service-wrap-ttl': '60' }))).toBe(60);
    expect(wrapTtlFrom(request({}))).toBeUndefined();
    expect(wrapTtlFrom(request({ 'x-service-wrap-ttl': '' }))).toBeUndefined();
  });

  it('refuses a wrap TTL that is no duration, or not above zero, naming the header', () => {
    const refusal = (value: string) => {
      try {
        wrapTtlFrom(request({ 'x-service-wrap-ttl': value }));
      } catch (err) {
        return err instanceof ServiceError ? [err.kind, err.errors] : err;
      }
      return 'accepted';
    };
    expect(refusal('soon')).toEqual(['bad-request', ['X-Service-Wrap-TTL is not a valid duration']]);
    expect(refusal('0s')).toEqual(['bad-request', ['X-Service-Wrap-TTL must be greater than zero']]);
  });

  it('reads a header by its lower-case name, the first of repeated values', () => {
    expect(header(request({ accept: 'application/openmetrics-text, application/json' }), 'accept')).toBe('application/openmetrics-text, application/json');
    expect(header(request({ 'x-custom': ['one', 'two'] }), 'x-custom')).toBe('one');
    expect(header(request({}), 'accept')).toBeUndefined();
  });
});
