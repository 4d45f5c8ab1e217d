export { approleBackendFactory, approleDeclaration, createApproleBackend } from './approle-backend';
