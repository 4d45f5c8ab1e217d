export * from './shamir';
export * from './pgp';
export * from './seal';
export * from './transfer';
export * from './keyring-bus';
export * from './rekey';
export * from './generate-root';
