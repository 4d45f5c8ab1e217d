export { DEFAULT_ADDRESS, SvcClient } from './client';
export { SysClient } from './sys';
export { SvcApiError, SvcConnectionError } from './errors';
export * from './types';
export { cloudIamLoginData, NodeSha256, stsHost, type CloudCredentials, type CloudIamLoginData, type CloudIamLoginOptions } from './cloud-login';
export * from './areas';
export type { RenewalEnd } from './renewal';
export { wrapKeyForImport } from './key-wrap';
export { decodeOtpToken, encodeOtpToken } from './otp';
