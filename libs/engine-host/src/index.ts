export * from './protocol';
export * from './engine-host';
export * from './registry';
