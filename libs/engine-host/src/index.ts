export * from './protocol';
export * from './engine-host';
export * from './registry';
export * from './plugin-protocol';
export * from './plugin-host';
