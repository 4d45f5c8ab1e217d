import { ServiceError, UNSUPPORTED_PATH } from './errors';
import { httpStatus, isCallerError, toErrorBody } from './status';

describe('the HTTP status of an error', () => {
  it.each([
    [ServiceError.badRequest('bad'), 400],
    [ServiceError.forbidden(), 403],
    [ServiceError.notFound(), 404],
    [ServiceError.unsupportedPath(), 404],
    [ServiceError.methodNotAllowed(), 405],
    [ServiceError.conflict('busy'), 409],
    [ServiceError.precondition('header'), 412],
    [ServiceError.unsupportedMediaType('type'), 415],
    [ServiceError.internal('audit'), 500],
    [ServiceError.uninitialized(), 501],
    [ServiceError.badGateway('the database said no'), 502],
    [ServiceError.sealed(), 503],
    [ServiceError.unavailable('gone'), 503],
  ])('%s answers %i', (error, status) => {
    expect(toErrorBody(error)).toEqual({ status, errors: error.errors });
    expect(isCallerError(error.kind)).toBe(status < 500);
  });

  it('answers anything else 500 with a message that quotes nothing of it', () => {
    expect(toErrorBody(new Error('password=hunter2'))).toEqual({ status: 500, errors: ['internal error'] });
    expect(httpStatus('internal')).toBe(500);
  });

  it('names an unknown path as the API does', () => {
    expect(ServiceError.unsupportedPath().errors).toEqual([UNSUPPORTED_PATH]);
  });
});
