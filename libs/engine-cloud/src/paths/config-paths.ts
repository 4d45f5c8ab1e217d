/** config/root, config/rotate-root and config/lease. */
import { formatDuration, type FieldMap, type PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { renderUsername, TemplateError } from '@svc/username-template';
import type { CloudEngine } from '../engine';
import { endpointField as endpoint, rotateAccessKey } from '@svc/cloud-provider';
import { CONFIG, LEASE_CONFIG, type RootConfig } from '../records';

const ROOT_FIELDS: FieldMap = {
  access_key: { type: 'string', default: '', description: 'Access key id of the user the engine acts as. Without it (and secret_key): CLOUD_ACCESS_KEY/CLOUD_SECRET_KEY, then the SDK chain.' },
  secret_key: { type: 'string', default: '', sensitive: true, description: 'Secret access key; never returned.' },
  region: { type: 'string', default: '', description: 'Region; empty for CLOUD_REGION, then CLOUD_DEFAULT_REGION, then us-east-1.' },
  iam_endpoint: { type: 'string', default: '', description: "IAM endpoint URL; empty for the provider's." },
  sts_endpoint: { type: 'string', default: '', description: "STS endpoint URL; empty for the provider's." },
  max_retries: { type: 'int', default: -1, description: "Retries of a failed provider call; -1 for the SDK's default." },
  username_template: { type: 'string', default: '', description: 'Template for generated IAM user and STS names; empty for the default.' },
};

const LEASE_FIELDS: FieldMap = {
  lease: { type: 'duration', required: true, description: 'Lease TTL of IAM user credentials, e.g. "30m".' },
  lease_max: { type: 'duration', required: true, description: 'Longest an IAM user credential may be renewed to, e.g. "768h".' },
};

function describeRoot(config: RootConfig): Record<string, unknown> {
  const { access_key, region, iam_endpoint, sts_endpoint, max_retries, username_template } = config;
  return { access_key, region, iam_endpoint, sts_endpoint, max_retries, username_template };
}

export function configPaths(engine: CloudEngine): PathDeclaration[] {
  return [
    {
      pattern: 'config/root',
      synopsis: 'Configures the credentials, region and endpoints the engine calls the provider with.',
      fields: ROOT_FIELDS,
      operations: {
        read: {
          summary: 'Read the root configuration (never the secret key).',
          handler: async () => {
            const config = await engine.config();
            return config ? { data: describeRoot(config) } : undefined;
          },
        },
        update: {
          summary: 'Set the root configuration (replaces it; credentials are not checked).',
          handler: async (_req, fields) => {
            const config: RootConfig = {
              access_key: fields.get('access_key'),
              secret_key: fields.get('secret_key'),
              region: fields.get('region'),
              iam_endpoint: endpoint('iam_endpoint', fields.get('iam_endpoint')),
              sts_endpoint: endpoint('sts_endpoint', fields.get('sts_endpoint')),
              max_retries: fields.get('max_retries'),
              username_template: fields.get('username_template'),
            };
            if (!config.access_key !== !config.secret_key) throw ServiceError.badRequest('fields "access_key" and "secret_key" go together: set both or neither');
            if (config.max_retries < -1) throw ServiceError.badRequest('field "max_retries": must be -1 (the SDK default) or more');
            try {
              renderUsername(config.username_template, { Type: 'IAM', DisplayName: 'token', PolicyName: 'role' });
            } catch (err) {
              if (err instanceof TemplateError) throw ServiceError.badRequest(`field "username_template": ${err.message}`);
              throw err;
            }
            await CONFIG.put(engine.storage, 'root', config);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'config/rotate-root',
      synopsis: "Replaces the root access key with a new one of the same user; the old one stops working.",
      description: 'The configured key must be the only key of its user (IAM allows two), since a new one is made before the old is deleted.',
      operations: {
        update: {
          summary: 'Rotate the root access key.',
          handler: async () => {
            const rotated = await rotateAccessKey(await engine.config(), await engine.clients(), (config) => CONFIG.put(engine.storage, 'root', config));
            return { data: { access_key: rotated.access_key } };
          },
        },
      },
    },
    {
      pattern: 'config/lease',
      synopsis: 'Configures the lease of IAM user credentials.',
      fields: LEASE_FIELDS,
      operations: {
        read: {
          summary: 'Read the lease configuration.',
          handler: async () => {
            const lease = await LEASE_CONFIG.get(engine.storage, 'lease');
            return lease ? { data: { lease: formatDuration(lease.lease), lease_max: formatDuration(lease.lease_max) } } : undefined;
          },
        },
        update: {
          summary: 'Set the lease configuration.',
          handler: async (_req, fields) => {
            await LEASE_CONFIG.put(engine.storage, 'lease', { lease: fields.get('lease'), lease_max: fields.get('lease_max') });
            return undefined;
          },
        },
      },
    },
  ];
}
