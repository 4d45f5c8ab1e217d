export * from './processes';
export * from './topology';
export * from './http';
export * from './openapi';
export * from './engine-harness';
export * from './postgres-logins';
export * from './mysql-logins';
export * from './tcp-proxy';
