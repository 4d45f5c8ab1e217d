export * from './protocol';
export * from './engine-host';
