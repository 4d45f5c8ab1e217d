import type { AuditBroker } from '@svc/audit';
import type { PathDeclaration } from '@svc/framework';
import type { AuditDevices } from '../audit/audit-devices';

/** What sys/audit and sys/audit-hash use of the core's parts. */
export interface AuditPathsDeps {
  /** The device table, and the broker whose devices hash values with their own keys. */
  audit: Pick<AuditDevices, 'list' | 'enable' | 'disable'> & { readonly broker: Pick<AuditBroker, 'hash'> };
}

/** sys/audit (devices) and sys/audit-hash. */
export function auditPaths(core: AuditPathsDeps): PathDeclaration[] {
  return [
    {
      pattern: 'audit',
      dataAtTopLevel: true,
      synopsis: 'Lists the enabled audit devices.',
      operations: {
        read: {
          summary: 'List audit devices.',
          sudo: true,
          handler: async () => ({
            data: Object.fromEntries(
              core.audit.list().map((d) => [d.path, { type: d.type, description: d.description, options: d.options, local: d.local, path: d.path }]),
            ),
          }),
        },
      },
    },
    {
      pattern: 'audit/*path',
      dataAtTopLevel: true,
      synopsis: 'Enables or disables an audit device.',
      fields: {
        type: { type: 'string', required: true, allowed: ['file'], description: 'Device type.' },
        description: { type: 'string', default: '', description: 'Human-friendly description.' },
        options: { type: 'kv-pairs', default: {}, description: 'Device options, e.g. file_path, log_raw, hmac_accessor, mode, prefix.' },
        local: { type: 'bool', default: false, description: 'Not replicated to other clusters.' },
      },
      operations: {
        update: {
          summary: 'Enable an audit device.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            await core.audit.enable({ path: f.params.path, type: f.get('type'), description: f.get('description'), options: f.get('options'), local: f.get('local') });
            return undefined;
          },
        },
        delete: {
          summary: 'Disable an audit device.',
          sudo: true,
          rootNamespace: true,
          handler: async (_req, f) => {
            await core.audit.disable(f.params.path);
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'audit-hash/*path',
      dataAtTopLevel: true,
      synopsis: 'The HMAC an audit device writes for a value, to find it in the log.',
      fields: { input: { type: 'string', required: true, sensitive: true, description: 'The value to hash.' } },
      operations: {
        update: { summary: 'Hash a value with a device\'s key.', handler: async (_req, f) => ({ data: { hash: core.audit.broker.hash(f.params.path, f.get('input')) } }) },
      },
    },
  ];
}
