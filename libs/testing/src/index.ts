export * from '@svc/local-cluster';
export * from './http';
export * from './openapi';
export * from './engine-harness';
export * from './postgres-logins';
export * from './mysql-logins';
export * from './tcp-proxy';
export * from './stub-api';
