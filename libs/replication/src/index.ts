export * from './types';
export * from './pki';
export * from './activation';
export * from './cluster-link';
export * from './paths-filter';
export * from './replication';
