// Shared with the engine host, which logs the unexpected errors of backends the same way.
export { describeRequestError } from '@svc/http';
