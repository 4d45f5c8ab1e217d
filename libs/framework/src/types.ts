/**
 * The contract between the framework, the core and every engine. A backend is a list of path
 * declarations; everything else (parsing, coercion, validation, help, OpenAPI) derives from them.
 */
import type { Readable } from 'node:stream';
import type { AuthBlock } from '@svc/api-contract';

/** Field types a path can declare. Coercion rules are in fields.ts. */
export type FieldType =
  | 'string'
  | 'int'
  | 'bool'
  | 'duration' // integer seconds or "30m", "24h", "1h30m"; coerced to integer seconds
  | 'comma-string-list' // JSON array or "a,b,c"; coerced to string[]
  | 'comma-int-list' // JSON array of ints or "1,2,3"; coerced to number[]
  | 'list' // JSON array, elements untouched
  | 'map' // JSON object
  | 'kv-pairs' // JSON object of string values, or ["k=v", ...]; coerced to Record<string,string>
  | 'name' // string restricted to [A-Za-z0-9_.-]+ (no '/')
  | 'time' // RFC 3339 string or unix seconds; coerced to a Date
  | 'header'; // map of string -> string[]

export interface FieldSchema {
  type: FieldType;
  description: string;
  default?: unknown;
  /** Enforced on create and update requests: absent -> 400 `missing required field "<name>"`. */
  required?: boolean;
  /** Allowed values for string fields. */
  allowed?: readonly string[];
  /** Value never echoed in warnings or errors. */
  sensitive?: boolean;
  /** Hidden from help/OpenAPI (deprecated aliases). */
  deprecated?: boolean;
}

export type FieldMap = Record<string, FieldSchema>;

/** Logical operations. HTTP verbs map onto these in the gateway. */
export type Operation = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list' | 'help';

/** Capabilities a policy can grant; the gateway computes the set for the request path. */
export type Capability = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list' | 'sudo' | 'deny' | 'root';

export interface MountInfo {
  /** Path of the mount inside its namespace, ending in '/', e.g. "secret/" or "auth/token/". */
  path: string;
  type: string;
  uuid: string;
  accessor: string;
  /** Namespace path ("" for root, otherwise "a/b/"). */
  namespace: string;
  description: string;
  config: {
    default_lease_ttl: number;
    max_lease_ttl: number;
    [key: string]: unknown;
  };
  options: Record<string, string>;
  local: boolean;
  seal_wrap: boolean;
  /**
   * The mount table: `auth` for auth methods (sys/auth), absent for secrets engines (sys/mounts).
   * A type name may be in both tables (`cloud`: credentials engine and auth method).
   */
  table?: 'auth';
  /** Served by an external plugin from the catalog (its `type` is the plugin's name), not a built-in engine. */
  external?: boolean;
  /** The plugin version the mount runs ('' for the unversioned registration or the built-in). */
  plugin_version?: string;
}

/** Who is calling. Filled by the gateway after token lookup. */
export interface Caller {
  tokenAccessor: string;
  tokenId?: string; // only present for core handlers that need it (e.g. token lookup-self)
  policies: string[];
  entityId: string;
  displayName: string;
  namespace: string;
  /** Token metadata, visible to handlers (e.g. for templating). */
  meta: Record<string, string>;
}

export interface Request {
  requestId: string;
  operation: Operation;
  /** Path relative to the mount, without leading '/'. */
  path: string;
  /** Raw request data: JSON body merged with query parameters (GET) before coercion. */
  data: Record<string, unknown>;
  /** Seconds the caller asked answers to be wrapped for (sys/wrapping/wrap wraps its data for that long). */
  wrapTtl?: number;
  /** The media types the client accepts, most wanted first as it listed them (sys/metrics answers in one). */
  accept?: string;
  mount: MountInfo;
  caller?: Caller;
  /** Capabilities granted on this path; handlers use them for create-vs-update decisions. */
  capabilities: ReadonlySet<Capability>;
  /** The connection's remote address (for audit and login methods). */
  remoteAddress?: string;
  /** Content type of the body, used by PATCH (merge-patch). */
  contentType?: string;
  /**
   * The request body as a stream, unparsed and without the listener's size limit: set only for the
   * few gateway endpoints that take a file (snapshot restore); `data` is empty then.
   */
  body?: Readable;
}

/** What a handler returns; `undefined` means "nothing to return" (204). */
export interface Response {
  data?: Record<string, unknown> | null;
  /**
   * `data` already serialized as a JSON object, set instead of `data` by an engine that writes its
   * answer faster than JSON.stringify would (transit batches: values that need no escaping).
   */
  dataJson?: string;
  warnings?: string[];
  /** A lease-bearing secret: the core registers a lease and returns lease_id. */
  secret?: SecretResponse;
  /** A login's result: the core turns it into a token (only auth methods' operations may answer one). */
  auth?: AuthResponse;
  /** A token already issued (by the core for a login, or by the token store): the envelope's `auth` block. */
  token?: IssuedToken;
  /** Data members repeated at the top level of the envelope (PathDeclaration.dataAtTopLevel). */
  dataAtTopLevel?: boolean;
  /** Overrides the status code (e.g. sys/health). */
  status?: number;
  /** Raw response body instead of the envelope (e.g. sys/health, seal-status return bare objects). */
  raw?: unknown;
  /** A body streamed as it is (a snapshot download), its type and length in `headers`; gateway endpoints only. */
  stream?: Readable;
  headers?: Record<string, string>;
}

export interface SecretResponse {
  /** Name of the secret type declared in the backend's `secrets` map. */
  type: string;
  /** Data kept with the lease and handed back on renew/revoke; never returned to clients. */
  internalData: Record<string, unknown>;
  ttl: number;
  maxTtl?: number;
  renewable: boolean;
}

/**
 * What an auth method answers to a successful login (Vault's logical.Auth): the core creates the
 * token from it. TTLs are seconds; 0 means the mount's (or the system's) default.
 */
export interface AuthResponse {
  /** Policies of the token (its token_policies; the core adds its entity's as identity_policies). */
  policies: string[];
  /** Leave out the `default` policy. */
  noDefaultPolicy?: boolean;
  metadata?: Record<string, string>;
  /** Shown as `<mount path>-<displayName>`, e.g. "userpass-alice". */
  displayName: string;
  ttl: number;
  /** Ceiling of the token's life from its creation, renewals included (below the mount's). */
  maxTtl?: number;
  period?: number;
  explicitMaxTtl?: number;
  numUses?: number;
  renewable: boolean;
  /** `default`, `default-service` and `default-batch` follow the mount's default (service). */
  tokenType?: 'service' | 'batch' | 'default' | 'default-service' | 'default-batch';
  /** Client addresses the token may be used from (CIDR blocks); none means anywhere. */
  boundCidrs?: string[];
  /** The identity the method vouched for (recorded on the token). */
  alias?: { name: string; metadata?: Record<string, string> };
  /**
   * Names of the caller's groups at the identity provider (a JWT's groups claim): the core makes the
   * entity a member of the external identity groups with group aliases of these names on the mount.
   */
  groupAliases?: string[];
  /** Kept with the token and handed back to the method on renewal; never shown to clients. */
  internalData?: Record<string, unknown>;
}

/** A token that exists: the envelope shows `auth`; `displayName` is for the audit log. */
export interface IssuedToken {
  auth: AuthBlock;
  displayName: string;
}

/** Coerced, validated request fields. */
export interface FieldData {
  /** Coerced value, or the declared default when absent. */
  get<T = unknown>(name: string): T;
  /** Whether the client sent the field (after coercion). */
  has(name: string): boolean;
  /**
   * Whether the path declares the field and the client sent it: for code shared by declarations
   * that each declare some of a set of fields (a role written whole or one field at a time).
   */
  sentDeclared(name: string): boolean;
  /** Raw request data (for pass-through maps such as KV v1 writes). */
  raw: Record<string, unknown>;
  /** Path parameters captured by the pattern. */
  params: Record<string, string>;
}

export type OperationHandler = (req: Request, fields: FieldData) => Promise<Response | undefined>;

export interface OperationDeclaration {
  handler: OperationHandler;
  summary: string;
  description?: string;
  /** Requires the `sudo` capability in addition to the path capability. */
  sudo?: boolean;
  /** Callable only from the root namespace. */
  rootNamespace?: boolean;
  /** Callable without a token (e.g. login, sys/health). */
  unauthenticated?: boolean;
  /** Data comes from the query string (GET) as well as the body. */
  forwardQuery?: boolean;
}

export interface PathDeclaration {
  /**
   * Pattern relative to the mount. Segments: literal, `:name` (one segment, not ending in '.'),
   * `*name` (the rest, one or more segments). A trailing `?` on the last parameter makes it optional,
   * e.g. `random/:bytes?` or `sign/:name/:algorithm?`.
   */
  pattern: string;
  /**
   * Further patterns the same declaration serves, as Vault still serves its legacy paths (e.g.
   * `revoke` beside `leases/revoke`): one handler, one set of flags, each pattern in help and OpenAPI.
   */
  aliases?: readonly string[];
  fields?: FieldMap;
  operations: Partial<Record<Exclude<Operation, 'help'>, OperationDeclaration | OperationHandler>>;
  /** Decides create vs update for POST/PUT; without it a write is an update. May answer at once. */
  existenceCheck?: (req: Request, fields: FieldData) => boolean | Promise<boolean>;
  /**
   * The path's handlers serve a create and an update alike: the existence check only decides which
   * capability the caller needs, and is skipped for a caller that holds both (the request stays an update).
   */
  createAndUpdateAlike?: boolean;
  /** Markdown, one line. */
  synopsis: string;
  /** Markdown, longer description. */
  description?: string;
  /** Unknown fields produce a warning unless this is set (pass-through bodies, e.g. KV v1). */
  acceptsAnyFields?: boolean;
  /**
   * The answer's data members are also written at the top level of the envelope: the shape Vault
   * keeps on some sys/ paths (mounts, auth, policy, audit, capabilities) for clients that read it there.
   */
  dataAtTopLevel?: boolean;
}

/** A lease-bearing secret type: the core calls these on renew and on revoke/expiry. */
export interface SecretType {
  description: string;
  renew?: (req: Request, internalData: Record<string, unknown>) => Promise<Response | undefined>;
  revoke: (req: Request, internalData: Record<string, unknown>) => Promise<void>;
}

/**
 * A backend is built once per mount with the mount's storage (its factory receives it) and lives
 * until the mount is disabled, retuned or the process stops. The host calls these hooks around it.
 */
export interface BackendDeclaration {
  /** Mount type, e.g. "kv", "transit". */
  type: string;
  /** Markdown help for the mount root. */
  help: string;
  paths: PathDeclaration[];
  secrets?: Record<string, SecretType>;
  /**
   * Once, after the backend is built for a mount and before its first request; it may read and
   * write the mount's storage. A failure is answered to that request and the backend is not kept,
   * so the next request tries again.
   */
  initialize?: () => Promise<void>;
  /**
   * A key under the mount's storage (relative to the mount) was changed by another replica: drop
   * whatever is cached of it.
   */
  invalidate?: (key: string) => void;
  /**
   * Background work (rotations, tidy). The core calls it for every mount about once a minute, on
   * exactly one replica at a time.
   */
  periodic?: () => Promise<void>;
  /** The mount is disabled or retuned, or the process stops: release pools and timers. */
  cleanup?: () => Promise<void>;
  /**
   * An auth method's check when one of its tokens is renewed: given the login's auth as the token
   * holds it (internal data included), it answers the auth to renew with (new TTL, policies) or
   * throws to refuse. Without it, the method's tokens cannot be renewed.
   */
  renewAuth?: (req: Request, auth: AuthResponse) => Promise<AuthResponse>;
}
