import type { Readable } from 'node:stream';
import type { AuthResponse, Capability, Caller, LoginDeclaration, MountInfo, Operation, Response } from '@svc/framework';
import type { ErrorKind } from '@svc/api-contract';

/**
 * The message contract between the gateway and an engine service. The same objects travel as JSON
 * over NATS in the distributed topology and as plain objects in the all-in-one process.
 */
export type EngineRequest =
  | ({ kind: 'operation' } & OperationFields)
  | ({ kind: 'help' } & OperationFields)
  /** Which of the mount's operations are logins (its `LoginDeclaration`), for a gateway that does not run it. */
  | ({ kind: 'logins' } & OperationFields)
  | ({ kind: 'periodic' } & OperationFields)
  | ({ kind: 'renew' | 'revoke'; secretType: string; internalData: Record<string, unknown> } & OperationFields)
  /** A token from a login at this auth mount is being renewed: the method re-checks its `auth`. */
  | ({ kind: 'renew-auth'; auth: AuthResponse } & OperationFields);

export interface OperationFields {
  requestId: string;
  mount: MountInfo;
  operation: Operation;
  path: string;
  data: Record<string, unknown>;
  /** Seconds the caller asked answers to be wrapped for. */
  wrapTtl?: number;
  /** The media types the client accepts. */
  accept?: string;
  caller?: Caller;
  capabilities: Capability[];
  remoteAddress?: string;
  contentType?: string;
  /** A streamed request body (Request.body): only handed to engines in the gateway process, never over the bus. */
  body?: Readable;
  /**
   * The mount's storage is replicated and this cluster is a performance secondary: the service
   * refuses the request's writes (read-only-replicated), and the gateway sends it to the primary.
   * Set by the gateway for a service in another process, whose barrier cannot tell by itself.
   */
  replicatedReadOnly?: boolean;
}

export type EngineReply =
  | { ok: true; response?: Response; help?: { help: string; openapi: unknown }; logins?: LoginDeclaration }
  | { ok: false; kind: ErrorKind; errors: string[] };

/** Subjects carry the cluster's prefix (bus `subject_prefix`) so clusters sharing NATS stay apart. */
export function serviceSubject(service: string, prefix = 'svc'): string {
  return `${prefix}.${service}.request`;
}

/** Answered by every live instance of a service: "no responders" here means none is left. */
export function servicePresenceSubject(service: string, prefix = 'svc'): string {
  return `${prefix}.${service}.presence`;
}

export function serviceQueue(service: string, prefix = 'svc'): string {
  return `${prefix}.${service}`;
}

/** Broadcast when a mount is disabled, so every replica of its service closes the backend. */
export function mountRemovedSubject(prefix = 'svc'): string {
  return `${prefix}.mounts.removed`;
}

/**
 * Broadcast among the replicas of one service: the barrier keys of mount storage a replica wrote,
 * so the others' backends drop what they cached of them (each ignores its own).
 */
export function mountInvalidationSubject(service: string, prefix = 'svc'): string {
  return `${prefix}.${service}.invalidate`;
}

export interface MountInvalidation {
  sender: string;
  keys: string[];
}
