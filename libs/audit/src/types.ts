import type { WrapInfo } from '@svc/api-contract';

/** The authentication behind a request, or the one a login response issues. */
export interface AuditAuth {
  client_token: string;
  accessor: string;
  display_name: string;
  policies: string[];
  token_policies: string[];
  metadata: Record<string, string> | null;
  entity_id: string;
  token_type: string;
  /** Seconds. */
  token_ttl: number;
  num_uses?: number;
}

export interface AuditRequest {
  id: string;
  operation: string;
  mount_type: string;
  mount_accessor: string;
  client_token: string;
  client_token_accessor: string;
  namespace: { id: string; path: string };
  path: string;
  data?: Record<string, unknown> | null;
  remote_address: string;
  /** Seconds; 0 when the client did not ask for a wrapped response. */
  wrap_ttl: number;
  /** Only the headers the operator chose to audit. */
  headers?: Record<string, string[]>;
}

export interface AuditResponse {
  mount_type: string;
  mount_accessor?: string;
  data?: Record<string, unknown> | null;
  secret?: { lease_id: string };
  auth?: AuditAuth;
  /** As the response envelope carries it. */
  wrap_info?: WrapInfo;
  warnings?: string[];
  status?: number;
}

/** One audit record, exactly as a device writes it (before or after hashing). */
export interface AuditLine {
  /** ISO 8601 / RFC 3339 timestamp, UTC. */
  time: string;
  type: 'request' | 'response';
  auth?: AuditAuth;
  request: AuditRequest;
  response?: AuditResponse;
  /** The operation's error messages, joined; absent when it succeeded. */
  error?: string;
}

/**
 * Per-mount lists of data keys whose values stay in clear (Vault's mount tuning options
 * audit_non_hmac_request_keys / audit_non_hmac_response_keys).
 */
export interface NonHmacKeys {
  nonHmacRequestKeys?: readonly string[];
  nonHmacResponseKeys?: readonly string[];
}

/** What the gateway hands the broker before a request is served. */
export interface AuditRequestEntry extends NonHmacKeys {
  auth?: AuditAuth;
  request: AuditRequest;
  /** Set when the request is refused before it reaches a handler (e.g. permission denied). */
  errors?: readonly string[];
}

/** What the gateway hands the broker once the response is known. */
export interface AuditResponseEntry extends AuditRequestEntry {
  response?: AuditResponse;
}

export interface AuditDevice {
  readonly path: string;
  readonly type: string;
  readonly description: string;
  /** The options as the operator gave them (what sys/audit lists). */
  readonly options: Record<string, string>;
  /** Local devices are not replicated to other clusters. */
  readonly local: boolean;
  /** Hashes (unless configured raw) and writes one record. Rejects when the record was not written. */
  log(line: AuditLine, nonHmacKeys?: NonHmacKeys): Promise<void>;
  /** The HMAC this device writes for `input` (sys/audit-hash). */
  hash(input: string): string;
  /** Reopens what the device writes to, so a log rotated away is followed by a new file (SIGHUP). */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** Settings shared by every device type, outside its options map. */
export interface AuditDeviceSettings {
  description?: string;
  local?: boolean;
}
