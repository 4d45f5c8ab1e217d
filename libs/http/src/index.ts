export * from './errors';
export * from './envelope';
