import { ServiceError } from '@svc/api-contract';
import type { AuditDevice, AuditLine, AuditRequestEntry, AuditResponseEntry, NonHmacKeys } from './types';

/** Told about a device that failed to write; it gets the error, never the entry. */
export type DeviceErrorHandler = (devicePath: string, error: unknown) => void;

export interface AuditBrokerOptions {
  onDeviceError?: DeviceErrorHandler;
  /** Clock for the `time` field; tests pin it. */
  now?: () => Date;
}

/** Audit device paths compare without their surrounding slashes ("file/" is "file"). */
export function normalizeDevicePath(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

/**
 * Fans each audit record out to every enabled device. A request may only be served if at least one
 * device recorded it: when devices are enabled and all of them fail, logging throws and the
 * gateway refuses the request instead of serving it unaudited.
 */
export class AuditBroker {
  private readonly devices = new Map<string, AuditDevice>();
  private readonly onDeviceError: DeviceErrorHandler;
  private readonly now: () => Date;

  constructor(options: AuditBrokerOptions = {}) {
    this.onDeviceError = options.onDeviceError ?? (() => undefined);
    this.now = options.now ?? (() => new Date());
  }

  register(device: AuditDevice): void {
    const path = normalizeDevicePath(device.path);
    if (!path) throw ServiceError.badRequest('audit device path must not be empty');
    if (this.devices.has(path)) throw ServiceError.badRequest(`path "${path}/" is already in use`);
    this.devices.set(path, device);
  }

  /** Removes and closes the device; false when none is registered at `path`. */
  async deregister(path: string): Promise<boolean> {
    const key = normalizeDevicePath(path);
    const device = this.devices.get(key);
    if (!device) return false;
    this.devices.delete(key);
    await device.close();
    return true;
  }

  get(path: string): AuditDevice | undefined {
    return this.devices.get(normalizeDevicePath(path));
  }

  /** The enabled devices, in the order they were registered. */
  list(): AuditDevice[] {
    return [...this.devices.values()];
  }

  get hasDevices(): boolean {
    return this.devices.size > 0;
  }

  logRequest(entry: AuditRequestEntry): Promise<void> {
    return this.logToAll('request', entry);
  }

  logResponse(entry: AuditResponseEntry): Promise<void> {
    return this.logToAll('response', entry);
  }

  /** sys/audit-hash: the HMAC the device at `path` would write for `input`. */
  hash(path: string, input: string): string {
    const device = this.get(path);
    if (!device) throw ServiceError.badRequest(`unknown audit device "${normalizeDevicePath(path)}"`);
    if (input === '') throw ServiceError.badRequest('the "input" parameter is empty');
    return device.hash(input);
  }

  /** Reopens every device (log rotation); one that fails is reported and the rest still reopen. Returns the paths reopened. */
  async reopen(): Promise<string[]> {
    const devices = this.list();
    const outcomes = await Promise.allSettled(devices.map((device) => device.reopen()));
    return devices.filter((device, index) => {
      const outcome = outcomes[index];
      if (outcome.status === 'rejected') this.onDeviceError(device.path, outcome.reason);
      return outcome.status === 'fulfilled';
    }).map((device) => device.path);
  }

  async close(): Promise<void> {
    const devices = this.list();
    this.devices.clear();
    await Promise.allSettled(devices.map((device) => device.close()));
  }

  private async logToAll(type: AuditLine['type'], entry: AuditResponseEntry): Promise<void> {
    if (this.devices.size === 0) return;
    const line = toLine(type, entry, this.now());
    const nonHmacKeys: NonHmacKeys = {
      nonHmacRequestKeys: entry.nonHmacRequestKeys,
      nonHmacResponseKeys: entry.nonHmacResponseKeys,
    };
    const devices = this.list();
    const outcomes = await Promise.allSettled(devices.map((device) => device.log(line, nonHmacKeys)));
    outcomes.forEach((outcome, index) => {
      if (outcome.status === 'rejected') this.onDeviceError(devices[index].path, outcome.reason);
    });
    if (!outcomes.some((outcome) => outcome.status === 'fulfilled')) {
      throw ServiceError.internal(`audit: no audit device could log the ${type}`);
    }
  }
}

function toLine(type: AuditLine['type'], entry: AuditResponseEntry, time: Date): AuditLine {
  const line: AuditLine = { time: time.toISOString(), type, auth: entry.auth, request: entry.request };
  if (type === 'response') line.response = entry.response;
  if (entry.errors && entry.errors.length > 0) line.error = entry.errors.join('; ');
  return line;
}
