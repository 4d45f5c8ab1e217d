export { approleBackendFactory, approleDeclaration } from './approle-backend';
