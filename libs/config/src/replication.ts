import { objectsOf } from './blocks';
import { ConfigError } from './errors';
import { Section } from './section';

/** The `replication` stanza: the primary's log shipper buffer (the log entries secondaries stream from). */
export interface ReplicationConfig {
  /** Entries the buffer holds at most (`log_shipper_buffer_length`). */
  logShipperBufferLength?: number;
  /** Bytes of keys and values the buffer holds at most (`log_shipper_buffer_size`). */
  logShipperBufferSize?: number;
}

export function parseReplication(value: unknown, sourceName: string, warnings: string[]): ReplicationConfig | undefined {
  if (value === undefined) return undefined;
  const blocks = objectsOf(value);
  if (!blocks || blocks.length !== 1) throw new ConfigError(`${sourceName}: replication must be one block such as replication { log_shipper_buffer_length = 16384 }`);
  const section = new Section(`${sourceName}: replication`, blocks[0]);
  const positive = (key: string) => {
    const number = section.int(key);
    if (number !== undefined && number < 1) throw section.error(`${key} must be a positive integer`);
    return number;
  };
  const length = positive('log_shipper_buffer_length');
  const size = positive('log_shipper_buffer_size');
  section.warnUnknown(warnings);
  return { ...(length !== undefined ? { logShipperBufferLength: length } : {}), ...(size !== undefined ? { logShipperBufferSize: size } : {}) };
}
