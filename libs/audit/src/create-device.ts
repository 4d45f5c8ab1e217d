import { ServiceError } from '@svc/api-contract';
import { FileAuditDevice } from './file-device';
import type { AuditDevice, AuditDeviceSettings } from './types';

export const AUDIT_DEVICE_TYPES = ['file'] as const;

/** Builds a device of `type` (as sys/audit/:path names it), validating its options. */
export function createAuditDevice(
  type: string,
  path: string,
  options: Record<string, string>,
  salt: Buffer,
  settings: AuditDeviceSettings = {},
): AuditDevice {
  switch (type) {
    case 'file':
      return new FileAuditDevice(path, options, salt, settings);
    default:
      throw ServiceError.badRequest(`unknown audit device type "${type}"; supported: ${AUDIT_DEVICE_TYPES.join(', ')}`);
  }
}
