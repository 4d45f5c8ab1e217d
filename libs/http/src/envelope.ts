/** The JSON shapes of Document 1: response envelope, wrap info, auth block. */

export interface WrapInfo {
  token: string;
  accessor: string;
  ttl: number;
  creation_time: string;
  creation_path: string;
  wrapped_accessor?: string;
}

export interface AuthBlock {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  identity_policies?: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
  entity_id: string;
  token_type: string;
  orphan: boolean;
  num_uses: number;
}

export interface Envelope {
  request_id: string;
  lease_id: string;
  renewable: boolean;
  lease_duration: number;
  data: Record<string, unknown> | null;
  wrap_info: WrapInfo | null;
  warnings: string[] | null;
  auth: AuthBlock | null;
  mount_type?: string;
}

export function envelope(requestId: string, fields: Partial<Envelope>): Envelope {
  const body: Envelope = {
    request_id: requestId,
    lease_id: fields.lease_id ?? '',
    renewable: fields.renewable ?? false,
    lease_duration: fields.lease_duration ?? 0,
    data: fields.data ?? null,
    wrap_info: fields.wrap_info ?? null,
    warnings: fields.warnings && fields.warnings.length > 0 ? fields.warnings : null,
    auth: fields.auth ?? null,
  };
  if (fields.mount_type !== undefined) body.mount_type = fields.mount_type;
  return body;
}

/**
 * The envelope as JSON, exactly as `JSON.stringify` writes it, with only the variable parts walked:
 * every answer is an envelope, and this is a third cheaper than stringifying the whole.
 */
export function envelopeJson(e: Envelope): string {
  const mountType = e.mount_type === undefined ? '' : `,"mount_type":${JSON.stringify(e.mount_type)}`;
  return (
    `{"request_id":${JSON.stringify(e.request_id)},"lease_id":${JSON.stringify(e.lease_id)},"renewable":${e.renewable ? 'true' : 'false'}` +
    `,"lease_duration":${Number.isFinite(e.lease_duration) ? e.lease_duration : 'null'},"data":${orNull(e.data)},"wrap_info":${orNull(e.wrap_info)}` +
    `,"warnings":${orNull(e.warnings)},"auth":${orNull(e.auth)}${mountType}}`
  );
}

function orNull(value: unknown): string {
  return value === null ? 'null' : JSON.stringify(value);
}
