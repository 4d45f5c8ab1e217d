export * from './types';
export { hashStructure, hashDataValues, hmacSha256, type HashOptions, type HmacFn } from './hash';
export { FileAuditDevice } from './file-device';
export { createAuditDevice, AUDIT_DEVICE_TYPES } from './create-device';
export {
  AuditBroker,
  normalizeDevicePath,
  type AuditBrokerOptions,
  type DeviceErrorHandler,
} from './broker';
