// The command loads the rest on demand: the primary of several workers runs none of the gateway.
export { runAsMain } from '@svc/api-contract';
export { runServerCommand } from './command';
