export { userpassBackendFactory, userpassDeclaration } from './userpass-backend';
