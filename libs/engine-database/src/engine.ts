/** The state one database mount keeps in one service replica, shared by its path handlers. */
import type { EngineContext } from '@svc/engine-host';
import type { FieldData, MountInfo, Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { ConnectionRegistry } from './connections';
import { policyPassword } from './passwords';
import type { PluginDefinition } from './plugins';
import type { ConnectionRecord } from './records';
import { StaticRotations } from './static-rotation';
import { renderUsername, type TemplateFields } from '@svc/username-template';

export class DatabaseEngine {
  readonly connections = new ConnectionRegistry();
  readonly rotations: StaticRotations;
  /** The mount's storage. */
  readonly storage: StorageView;

  constructor(
    readonly mount: MountInfo,
    readonly context: EngineContext,
  ) {
    this.storage = context.storage;
    this.rotations = new StaticRotations({
      mount,
      storage: context.storage,
      locks: context.locks,
      logger: context.logger,
      connections: this.connections,
      password: (policy) => this.password(policy),
    });
  }

  password(policyName: string): Promise<string> {
    return policyPassword(this.context, this.mount, policyName);
  }

  /** What username and common-name templates see; display names keep to characters every database accepts quoted. */
  usernameContext(req: Request, roleName: string): TemplateFields {
    return { DisplayName: (req.caller?.displayName || 'token').replace(/[^A-Za-z0-9_.-]/g, '-'), RoleName: roleName };
  }

  /** A new user's name from the connection's template (or the plugin's default, cut to the plugin's limit). */
  username(record: ConnectionRecord, definition: PluginDefinition, context: TemplateFields): string {
    if (record.username_template) return renderUsername(record.username_template, context);
    return renderUsername(definition.defaultUsernameTemplate, context).slice(0, definition.maxUsernameLength);
  }

  async close(): Promise<void> {
    this.rotations.stop();
    await this.connections.closeAll();
  }
}

/** The statements of a list field; a single string (as clients often send one statement) counts as one. */
export function statements(fields: FieldData, name: string, fallback: string[] = []): string[] {
  if (!fields.has(name)) return fallback;
  const value = fields.get<unknown[]>(name);
  if (!value.every((item) => typeof item === 'string')) throw ServiceError.badRequest(`field "${name}": must be a list of strings`);
  return value as string[];
}

/** The field's value if sent, else the stored one, else the declared default. */
export function merged<T>(fields: FieldData, name: string, stored: T | undefined): T {
  return fields.has(name) || stored === undefined ? fields.get<T>(name) : stored;
}
