export { cloudBackendFactory, CloudBackend, cloudDeclaration } from './cloud-backend';
export { WAL_ROLLBACK_MIN_AGE_MS } from './iam-users';
