export * from './processes';
export * from './topology';
export * from './http';
export * from './openapi';
