/** The server configuration after parsing (HCL or JSON) and validation. Durations are seconds. */
import type { StorageConfig } from '@svc/storage';
import type { NatsBusConfig } from '@svc/bus';
import type { RedisLockConfig } from '@svc/locks';

/** Selector ("default", "200", "4xx") -> header name -> values. */
export type CustomResponseHeaders = Record<string, Record<string, string[]>>;

export interface ListenerConfig {
  type: 'tcp';
  /** host:port */
  address: string;
  tlsDisable: boolean;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  tlsMinVersion: 'tls10' | 'tls11' | 'tls12' | 'tls13';
  /** Bytes; default 32 MiB. Infinity when the file disables the limit (a negative max_request_size). */
  maxRequestSize: number;
  requireRequestHeader: boolean;
  customResponseHeaders: CustomResponseHeaders;
}

export type ServiceName =
  | 'gateway'
  | 'transit'
  | 'database'
  | 'cloud'
  | 'auth-cloud'
  | 'sync'
  | 'snapshot'
  | 'replication';

export interface ServerConfig {
  listeners: ListenerConfig[];
  storage: StorageConfig;
  /** Absent: in-memory bus (all-in-one). */
  bus?: { type: 'nats' } & NatsBusConfig;
  /** Absent: in-memory locks (all-in-one). */
  locks?: { type: 'redis' } & RedisLockConfig;
  seal: { type: 'shamir' };
  ui: boolean;
  apiAddr?: string;
  clusterAddr?: string;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  /** Which services this process runs in all-in-one mode (default: all). */
  services?: ServiceName[];
  /** Problems that did not stop parsing, e.g. unknown fields that were ignored. */
  warnings?: string[];
}
