import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { AuditBroker, createAuditDevice } from '@svc/audit';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';

/** Full barrier key of the device table, for the replicas' cache sync. */
export const AUDIT_TABLE_KEY = 'core/audit-devices';

export interface AuditDeviceRecord {
  path: string;
  type: string;
  description: string;
  options: Record<string, string>;
  local: boolean;
  /** HMAC key of the device (base64); sys/audit-hash uses it too. */
  salt: string;
}

/**
 * The enabled audit devices: a table in the barrier (so every replica enables the same devices,
 * each writing its own local file) and the broker that writes every request and response to them.
 */
export class AuditDevices {
  readonly broker: AuditBroker;
  private records: AuditDeviceRecord[] = [];

  constructor(
    private readonly storage: StorageView,
    logger: Logger,
  ) {
    this.broker = new AuditBroker({
      onDeviceError: (path, err) => logger.error({ device: path, error: err instanceof ServiceError ? err.errors : (err as Error).name }, 'audit device failed'),
    });
  }

  async load(): Promise<void> {
    await this.broker.close();
    this.records = (await this.storage.getJSON<AuditDeviceRecord[]>(AUDIT_TABLE_KEY)) ?? [];
    for (const record of this.records) this.broker.register(this.open(record));
  }

  async close(): Promise<void> {
    await this.broker.close();
  }

  /** Reopens the devices' files after a log rotation (SIGHUP); returns the paths reopened. */
  reopen(): Promise<string[]> {
    return this.broker.reopen();
  }

  list(): AuditDeviceRecord[] {
    return this.records;
  }

  async enable(request: Omit<AuditDeviceRecord, 'salt'>): Promise<void> {
    const path = normalize(request.path);
    if (this.records.some((r) => r.path === path)) throw ServiceError.badRequest(`path "${path}" is already in use`);
    const record: AuditDeviceRecord = { ...request, path, salt: randomBytes(32).toString('base64') };
    const device = this.open(record); // a bad option or unwritable file fails here, before anything is stored
    await this.storage.putJSON(AUDIT_TABLE_KEY, [...this.records, record]);
    this.broker.register(device);
    this.records = [...this.records, record];
  }

  async disable(path: string): Promise<void> {
    const normalized = normalize(path);
    await this.storage.putJSON(AUDIT_TABLE_KEY, this.records.filter((r) => r.path !== normalized));
    this.records = this.records.filter((r) => r.path !== normalized);
    await this.broker.deregister(normalized);
  }

  private open(record: AuditDeviceRecord) {
    return createAuditDevice(record.type, record.path, record.options, Buffer.from(record.salt, 'base64'), {
      description: record.description,
      local: record.local,
    });
  }
}

function normalize(path: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (!trimmed) throw ServiceError.badRequest('audit device path must not be empty');
  return `${trimmed}/`;
}
