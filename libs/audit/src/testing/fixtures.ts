import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditAuth, AuditLine, AuditRequest, AuditResponse } from '../types';

/** Values a reader of the audit log must never see in clear unless the device logs raw. */
export const SECRETS = {
  clientToken: 'hvs.client-token-7c1f0e',
  accessor: 'accessor-2b9d4a',
  password: 'correct-horse-battery-staple',
  nestedApiKey: 'nested-api-key-51e2',
  issuedToken: 'hvs.issued-token-a8c3',
  issuedAccessor: 'issued-accessor-6f01',
  wrapToken: 'hvs.wrap-token-93dd',
  wrapAccessor: 'wrap-accessor-0c47',
  wrappedAccessor: 'wrapped-accessor-e215',
};

export function sampleAuth(overrides: Partial<AuditAuth> = {}): AuditAuth {
  return {
    client_token: SECRETS.clientToken,
    accessor: SECRETS.accessor,
    display_name: 'token-ci',
    policies: ['default', 'deploy'],
    token_policies: ['default', 'deploy'],
    metadata: { team: 'platform' },
    entity_id: 'entity-1',
    token_type: 'service',
    token_ttl: 3600,
    ...overrides,
  };
}

export function sampleRequest(overrides: Partial<AuditRequest> = {}): AuditRequest {
  return {
    id: 'req-1',
    operation: 'update',
    mount_type: 'kv',
    mount_accessor: 'kv_1234',
    client_token: SECRETS.clientToken,
    client_token_accessor: SECRETS.accessor,
    namespace: { id: 'root', path: '' },
    path: 'secret/data/app',
    data: {
      password: SECRETS.password,
      port: 5432,
      enabled: true,
      nothing: null,
      nested: { api_key: SECRETS.nestedApiKey, tags: ['blue', 'green'] },
    },
    remote_address: '127.0.0.1',
    wrap_ttl: 0,
    headers: { 'user-agent': ['svc-cli'] },
    ...overrides,
  };
}

export function sampleResponse(overrides: Partial<AuditResponse> = {}): AuditResponse {
  return {
    mount_type: 'kv',
    data: { password: SECRETS.password, version: 3 },
    secret: { lease_id: 'database/creds/app/lease-77' },
    auth: sampleAuth({ client_token: SECRETS.issuedToken, accessor: SECRETS.issuedAccessor }),
    wrap_info: {
      token: SECRETS.wrapToken,
      accessor: SECRETS.wrapAccessor,
      ttl: 300,
      creation_time: '2024-01-01T00:00:00.000Z',
      creation_path: 'secret/data/app',
      wrapped_accessor: SECRETS.wrappedAccessor,
    },
    warnings: ['a warning'],
    status: 200,
    ...overrides,
  };
}

export function sampleResponseLine(overrides: Partial<AuditLine> = {}): AuditLine {
  return {
    time: '2024-01-01T00:00:00.000Z',
    type: 'response',
    auth: sampleAuth(),
    request: sampleRequest(),
    response: sampleResponse(),
    ...overrides,
  };
}

/** A private directory under the OS temp dir, removed by `remove`. */
export function makeTempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-audit-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The audit file's lines, without the trailing newline's empty remainder. */
export function readLines(filePath: string): string[] {
  const text = readFileSync(filePath, 'utf8');
  expectTrailingNewline(text);
  return text === '' ? [] : text.slice(0, -1).split('\n');
}

function expectTrailingNewline(text: string): void {
  if (text !== '' && !text.endsWith('\n')) throw new Error('audit file does not end with a newline');
}
