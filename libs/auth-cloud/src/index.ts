export { cloudAuthBackendFactory, cloudAuthDeclaration, CloudAuthBackend } from './backend';
export { SERVER_ID_HEADER } from './paths/login-path';
export { getCallerIdentity, type CallerIdentity, type SignedCall } from './sts-forward';
