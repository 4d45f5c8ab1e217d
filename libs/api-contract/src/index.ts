export * from './errors';
export * from './status';
export * from './envelope';
export * from './version';
export * from './main';
export * from './outbound';
