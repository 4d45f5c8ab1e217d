/** The server configuration after parsing (HCL or JSON) and validation. Durations are seconds. */
import type { StorageConfig } from '@svc/storage';
import type { AwsKmsSealConfig, Pkcs11SealConfig, TransitSealConfig } from '@svc/seal';
import type { NatsBusConfig } from '@svc/bus';
import type { ReplicationConfig } from './replication';
import type { RedisLockConfig } from '@svc/locks';
import type { TelemetryConfig } from '@svc/metrics';

/** Selector ("default", "200", "4xx") -> header name -> values. */
export type CustomResponseHeaders = Record<string, Record<string, string[]>>;

export interface ListenerConfig {
  type: 'tcp';
  /** host:port */
  address: string;
  /**
   * host:port of the replication cluster listener (`cluster_address`): by default the API port + 1,
   * as Vault's; on a listener whose port is 0 (any free port), any free port too.
   */
  clusterAddress: string;
  tlsDisable: boolean;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  tlsMinVersion: 'tls10' | 'tls11' | 'tls12' | 'tls13';
  /** Refuse connections without a client certificate signed by tlsClientCaFile (or a system CA). */
  tlsRequireAndVerifyClientCert?: true;
  /** CAs of client certificates; set alone, a client certificate is asked for but not required. */
  tlsClientCaFile?: string;
  /** Bytes; default 32 MiB. Infinity when the file disables the limit (a negative max_request_size). */
  maxRequestSize: number;
  requireRequestHeader: boolean;
  /** Refuse the unauthenticated sys/rekey/* and sys/rekey-recovery-key/* calls on this listener. */
  disableUnauthedRekeyEndpoints: boolean;
  /** Refuse the unauthenticated sys/generate-root/* calls on this listener. */
  disableUnauthedGenerateRootEndpoints: boolean;
  customResponseHeaders: CustomResponseHeaders;
  /** sys/metrics answers on this listener without a token (`telemetry { unauthenticated_metrics_access = true }`). */
  unauthenticatedMetricsAccess: boolean;
  timeouts: ListenerTimeouts;
  jsonLimits: JsonLimits;
}

/** How long a connection may take over each part of an exchange, in milliseconds; 0 is no limit. */
export interface ListenerTimeouts {
  /** Reading a request's head (http_read_header_timeout). */
  readHeaderMs: number;
  /** Reading a whole request, body included (http_read_timeout). */
  readMs: number;
  /** From a request's head to the end of its answer (http_write_timeout). */
  writeMs: number;
  /** Waiting for the next request on a kept-alive connection (http_idle_timeout). */
  idleMs: number;
}

/** Limits on the JSON of a request body (max_json_*); bytes for strings, as sent. */
export interface JsonLimits {
  maxDepth: number;
  maxStringValueLength: number;
  maxObjectEntryCount: number;
  maxArrayElementCount: number;
}

/** Overrides of provider API endpoints (`provider_endpoints` block); absent fields use the public APIs. */
export interface ProviderEndpoints {
  /** cloud-sm destinations (the SDK also honours AWS_ENDPOINT_URL_SECRETS_MANAGER). */
  cloud_sm?: string;
  /** The directory (token) authority of cloudb-kv destinations. */
  cloudb_authority?: string;
  cloudc_sm?: string;
  /** Code host API base, e.g. an enterprise server's https://HOST/api/v3. */
  codehost?: string;
  webhost?: string;
}

export interface ServerConfig {
  listeners: ListenerConfig[];
  storage: StorageConfig;
  /** Absent: in-memory bus (all-in-one). */
  bus?: { type: 'nats' } & NatsBusConfig;
  /** Absent: in-memory locks (all-in-one). */
  locks?: { type: 'redis' } & RedisLockConfig;
  seal: { type: 'shamir' } | TransitSealConfig | AwsKmsSealConfig | Pkcs11SealConfig;
  /** During a seal migration: the seal being migrated from (its stanza marked `disabled`). */
  disabledSeal?: ServerConfig['seal'];
  ui: boolean;
  apiAddr?: string;
  clusterAddr?: string;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  /**
   * How long a gateway waits for an engine service's answer to a request (`default_max_request_duration`,
   * milliseconds). Key generation (RSA-4096) can take seconds on a busy host.
   */
  maxRequestDurationMs: number;
  /** Where the executables of external plugins live (`plugin_directory`): catalog commands are resolved inside it. */
  pluginDirectory?: string;
  /**
   * Gateway worker processes sharing the listeners (`workers`); absent: one per CPU (`svc server`
   * decides, and a dev server runs one).
   */
  workers?: number;
  /**
   * Entries of each process's read cache of storage (`cache_size`); 0 with `disable_cache`; absent:
   * the storage's default. Every gateway worker and replica keeps a cache of its own.
   */
  cacheSize?: number;
  /** Which engine services this process runs in all-in-one mode (default: all). */
  services?: string[];
  /** API base URLs the sync worker uses instead of the providers' public ones. */
  providerEndpoints: ProviderEndpoints;
  /** The `telemetry` stanza: what sys/metrics and the services' metrics show. */
  telemetry: TelemetryConfig;
  /** The `replication` stanza (the log shipper's limits); absent: the defaults. */
  replication?: ReplicationConfig;
  /** Problems that did not stop parsing, e.g. unknown fields that were ignored. */
  warnings?: string[];
}
