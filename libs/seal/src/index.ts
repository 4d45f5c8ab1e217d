export * from './shamir';
export * from './pgp';
export * from './seal';
export * from './transfer';
export * from './keyring-bus';
