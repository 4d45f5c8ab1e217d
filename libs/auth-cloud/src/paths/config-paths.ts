/** config/client, config/rotate-root, config/identity, config/certificate(s), config/sts and config/tidy/*. */
import { X509Certificate } from 'node:crypto';
import { endpointField as endpoint, rotateAccessKey } from '@svc/cloud-provider';
import { listResponse, type FieldData, type FieldMap, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { CloudAuth } from '../method';
import {
  CERTIFICATES,
  CLIENT_CONFIG,
  DEFAULT_SAFETY_BUFFER,
  IAM_METADATA_DEFAULT,
  IAM_METADATA_FIELDS,
  IDENTITY_CONFIG,
  STS_ROLES,
  TIDY_CONFIG,
  VM_METADATA_DEFAULT,
  VM_METADATA_FIELDS,
  type CertificateRecord,
  type ClientConfig,
  type IdentityConfig,
} from '../records';

const CLIENT_FIELDS: FieldMap = {
  max_retries: { type: 'int', default: -1, description: "Retries of a failed provider call; -1 for the SDK's default." },
  access_key: { type: 'string', default: '', description: 'Access key id the method calls the provider with. Without it: CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, then the SDK chain.' },
  secret_key: { type: 'string', default: '', sensitive: true, description: 'Secret access key; never returned.' },
  endpoint: { type: 'string', default: '', description: 'URL of the instance (EC2) API; empty for the provider\'s.' },
  iam_endpoint: { type: 'string', default: '', description: 'URL of the IAM API; empty for the provider\'s.' },
  sts_endpoint: { type: 'string', default: '', description: 'URL iam logins are forwarded to; empty for https://sts.amazonaws.com.' },
  sts_region: { type: 'string', default: '', description: 'Region of sts_endpoint (only with it).' },
  use_sts_region_from_client: { type: 'bool', default: false, description: 'Forward iam logins to the STS endpoint of the region the client signed for.' },
  iam_server_id_header_value: { type: 'string', default: '', description: 'When set, iam logins must carry and sign X-Service-Cloud-IAM-Server-ID with this value.' },
  allowed_sts_header_values: { type: 'comma-string-list', default: [], description: 'Extra headers allowed in iam_request_headers.' },
};

const IDENTITY_FIELDS: FieldMap = {
  iam_alias: { type: 'string', allowed: ['role_id', 'unique_id', 'full_arn'], description: 'Entity alias name of iam logins: role_id (default), unique_id or full_arn.' },
  iam_metadata: { type: 'comma-string-list', description: `Alias metadata of iam logins: "default" (${IAM_METADATA_DEFAULT.join(', ')}) or any of ${IAM_METADATA_FIELDS.join(', ')}.` },
  vm_alias: { type: 'string', allowed: ['role_id', 'instance_id', 'image_id'], description: 'Entity alias name of vm logins: role_id (default), instance_id or image_id.' },
  vm_metadata: { type: 'comma-string-list', description: `Alias metadata of vm logins: "default" (${VM_METADATA_DEFAULT.join(', ')}) or any of ${VM_METADATA_FIELDS.join(', ')}.` },
};

const TIDY_FIELDS: FieldMap = {
  safety_buffer: { type: 'duration', default: DEFAULT_SAFETY_BUFFER, description: 'Time kept beyond an entry\'s expiration before tidy removes it (default 72h).' },
  disable_periodic_tidy: { type: 'bool', default: false, description: 'Do not tidy periodically.' },
};

/** A metadata list as written: "default" stands for the default set; anything else must be a known field. */
function metadataList(name: string, given: string[], known: readonly string[], defaults: readonly string[]): string[] {
  if (given.includes('default')) {
    if (given.length > 1) throw ServiceError.badRequest(`field "${name}": "default" cannot be combined with other fields`);
    return [...defaults];
  }
  const unknown = given.filter((field) => !known.includes(field));
  if (unknown.length) throw ServiceError.badRequest(`field "${name}": unknown field(s) ${unknown.map((f) => `"${f}"`).join(', ')}; allowed: ${known.join(', ')}`);
  return [...new Set(given)];
}

/** A certificate as PEM, from PEM or base64 DER; refused when it is not an X.509 certificate. */
export function certificatePem(text: string): string {
  const trimmed = text.trim();
  try {
    const der = trimmed.startsWith('-----BEGIN') ? trimmed : Buffer.from(trimmed.replace(/\s+/g, ''), 'base64');
    return new X509Certificate(der).toString().trimEnd();
  } catch {
    throw ServiceError.badRequest('field "cloud_public_cert": not a PEM or base64 DER X.509 certificate');
  }
}

const ARN = /^arn:[\w-]+:iam::\d{12}:role\/.+/;

export function configPaths(method: CloudAuth): PathDeclaration[] {
  const { storage } = method;

  const tidyPath = (list: 'identity-accesslist' | 'roletag-denylist', legacy: string): PathDeclaration => ({
    pattern: `config/tidy/${list}`,
    aliases: [`config/tidy/${legacy}`],
    synopsis: `Configures the tidy of the ${list === 'identity-accesslist' ? 'identity access list' : 'role tag deny list'}.`,
    fields: TIDY_FIELDS,
    existenceCheck: async () => (await TIDY_CONFIG.get(storage, list)) !== null,
    operations: {
      read: {
        summary: 'Read the tidy configuration.',
        handler: async () => {
          const config = await TIDY_CONFIG.get(storage, list);
          return config ? { data: { ...config } } : undefined;
        },
      },
      create: { summary: 'Set the tidy configuration.', handler: (_req, f) => writeTidy(list, f) },
      update: { summary: 'Set the tidy configuration.', handler: (_req, f) => writeTidy(list, f) },
      delete: {
        summary: 'Delete the tidy configuration (back to the defaults).',
        handler: async () => {
          await TIDY_CONFIG.delete(storage, list);
          return undefined;
        },
      },
    },
  });

  async function writeTidy(list: string, f: FieldData): Promise<undefined> {
    const existing = await TIDY_CONFIG.get(storage, list);
    const safetyBuffer = f.has('safety_buffer') ? f.get<number>('safety_buffer') : (existing?.safety_buffer ?? DEFAULT_SAFETY_BUFFER);
    if (safetyBuffer < 1) throw ServiceError.badRequest('field "safety_buffer": must be at least one second');
    await TIDY_CONFIG.put(storage, list, {
      safety_buffer: safetyBuffer,
      disable_periodic_tidy: f.has('disable_periodic_tidy') ? f.get('disable_periodic_tidy') : (existing?.disable_periodic_tidy ?? false),
    });
    return undefined;
  }

  return [
    {
      pattern: 'config/client',
      synopsis: 'Configures the credentials and endpoints the method calls the provider with, and the checks of iam logins.',
      fields: CLIENT_FIELDS,
      existenceCheck: async () => (await method.clientConfig()) !== null,
      operations: {
        read: {
          summary: 'Read the client configuration (never the secret key).',
          handler: async () => {
            const config = await method.clientConfig();
            if (!config) return undefined;
            const { secret_key: _secret, region: _region, ...shown } = config;
            return { data: shown };
          },
        },
        create: { summary: 'Configure the client.', handler: (_req, f) => writeClient(f) },
        update: { summary: 'Update the client configuration (fields not sent stay).', handler: (_req, f) => writeClient(f) },
        delete: {
          summary: 'Delete the client configuration.',
          handler: async () => {
            await CLIENT_CONFIG.delete(storage, 'client');
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'config/rotate-root',
      synopsis: 'Replaces the configured access key with a new one of the same user; the old one stops working.',
      description: 'The configured key must be the only key of its user (IAM allows two), since a new one is made before the old is deleted.',
      operations: {
        update: {
          summary: 'Rotate the access key.',
          handler: async () => {
            const config = await method.clientConfig();
            const rotated = await rotateAccessKey(config, await method.clients(config), (next) => CLIENT_CONFIG.put(storage, 'client', next));
            return { data: { access_key: rotated.access_key } };
          },
        },
      },
    },
    {
      pattern: 'config/identity',
      synopsis: 'Configures the entity alias and metadata logins give the identity store.',
      fields: IDENTITY_FIELDS,
      operations: {
        read: { summary: 'Read the identity configuration.', handler: async () => ({ data: { ...(await method.identityConfig()) } }) },
        update: {
          summary: 'Set the identity configuration (fields not sent stay).',
          handler: async (_req, f) => {
            const existing = await method.identityConfig();
            const config: IdentityConfig = {
              iam_alias: f.has('iam_alias') ? f.get('iam_alias') : existing.iam_alias,
              iam_metadata: f.has('iam_metadata') ? metadataList('iam_metadata', f.get('iam_metadata'), IAM_METADATA_FIELDS, IAM_METADATA_DEFAULT) : existing.iam_metadata,
              vm_alias: f.has('vm_alias') ? f.get('vm_alias') : existing.vm_alias,
              vm_metadata: f.has('vm_metadata') ? metadataList('vm_metadata', f.get('vm_metadata'), VM_METADATA_FIELDS, VM_METADATA_DEFAULT) : existing.vm_metadata,
            };
            await IDENTITY_CONFIG.put(storage, 'identity', config);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'config/certificate/:cert_name',
      synopsis: 'Registers a public certificate of the provider that verifies instance identity documents.',
      fields: {
        cert_name: { type: 'name', description: 'Name of the certificate.' },
        cloud_public_cert: { type: 'string', required: true, description: 'The certificate: PEM, or base64 DER.' },
        type: { type: 'string', default: 'pkcs7', allowed: ['pkcs7', 'identity'], description: 'pkcs7 (PKCS#7 and RSA-2048 signatures) or identity (the document and its signature).' },
      },
      operations: {
        read: {
          summary: 'Read a certificate.',
          handler: async (_req, f) => {
            const record = await CERTIFICATES.get(storage, f.params.cert_name.toLowerCase());
            return record ? { data: { ...record } } : undefined;
          },
        },
        update: {
          summary: 'Register a certificate.',
          handler: async (_req, f) => {
            const record: CertificateRecord = { cloud_public_cert: certificatePem(f.get('cloud_public_cert')), type: f.get('type') };
            await CERTIFICATES.put(storage, f.params.cert_name.toLowerCase(), record);
            return undefined;
          },
        },
        delete: {
          summary: 'Delete a certificate.',
          handler: async (_req, f) => {
            await CERTIFICATES.delete(storage, f.params.cert_name.toLowerCase());
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'config/certificates/',
      synopsis: 'Lists the registered certificates.',
      operations: { list: { summary: 'List the certificates.', handler: async () => listResponse(await CERTIFICATES.list(storage)) } },
    },
    {
      pattern: 'config/sts/:account_id',
      synopsis: 'Associates a role to assume with an account, to look up its instances and principals.',
      fields: {
        account_id: { type: 'string', description: 'The account id (12 digits).' },
        sts_role: { type: 'string', required: true, description: 'ARN of the role to assume in that account.' },
      },
      operations: {
        read: {
          summary: 'Read the role of an account.',
          handler: async (_req, f) => {
            const record = await STS_ROLES.get(storage, accountId(f));
            return record ? { data: { ...record } } : undefined;
          },
        },
        update: {
          summary: 'Set the role of an account.',
          handler: async (_req, f) => {
            const stsRole = f.get<string>('sts_role');
            if (!ARN.test(stsRole)) throw ServiceError.badRequest(`field "sts_role": "${stsRole}" is not a role ARN`);
            await STS_ROLES.put(storage, accountId(f), { sts_role: stsRole });
            return undefined;
          },
        },
        delete: {
          summary: 'Delete the role of an account.',
          handler: async (_req, f) => {
            await STS_ROLES.delete(storage, accountId(f));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'config/sts/',
      synopsis: 'Lists the accounts with a role to assume.',
      operations: { list: { summary: 'List the accounts.', handler: async () => listResponse(await STS_ROLES.list(storage)) } },
    },
    tidyPath('identity-accesslist', 'identity-whitelist'),
    tidyPath('roletag-denylist', 'roletag-blacklist'),
  ];

  async function writeClient(f: FieldData): Promise<undefined> {
    const existing = await method.clientConfig();
    const take = <T>(name: keyof ClientConfig): T => (f.has(name) ? f.get<T>(name) : existing ? (existing[name] as T) : (CLIENT_FIELDS[name].default as T));
    const config: ClientConfig = {
      max_retries: take('max_retries'),
      access_key: take('access_key'),
      secret_key: take('secret_key'),
      endpoint: endpoint('endpoint', take('endpoint')),
      iam_endpoint: endpoint('iam_endpoint', take('iam_endpoint')),
      sts_endpoint: endpoint('sts_endpoint', take('sts_endpoint')),
      sts_region: take('sts_region'),
      region: '',
      use_sts_region_from_client: take('use_sts_region_from_client'),
      iam_server_id_header_value: take('iam_server_id_header_value'),
      allowed_sts_header_values: take<string[]>('allowed_sts_header_values').map((name) => name.trim()).filter(Boolean),
    };
    if (!config.access_key !== !config.secret_key) throw ServiceError.badRequest('fields "access_key" and "secret_key" go together: set both or neither');
    if (config.max_retries < -1) throw ServiceError.badRequest('field "max_retries": must be -1 (the SDK default) or more');
    if (config.sts_region && !config.sts_endpoint) throw ServiceError.badRequest('field "sts_region": only with sts_endpoint');
    await CLIENT_CONFIG.put(storage, 'client', config);
    return undefined;
  }
}

function accountId(f: FieldData): string {
  const id = f.params.account_id;
  if (!/^\d{12}$/.test(id)) throw ServiceError.badRequest(`field "account_id": "${id}" is not a 12-digit account id`);
  return id;
}
