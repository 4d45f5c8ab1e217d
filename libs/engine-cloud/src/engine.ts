/** The state one cloud-credential mount keeps in one service replica, shared by its path handlers. */
import type { EngineContext } from '@svc/engine-host';
import type { MountInfo, Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { renderUsername, TemplateError } from '@svc/username-template';
import { ProviderClientCache, type ProviderClients } from '@svc/cloud-provider';
import { CONFIG, type RootConfig } from './records';

/**
 * The default username template: STS names are the prefix, the time and 20 random characters (32 at
 * most); IAM users add the caller's display name and the role's name (42 at most together), 64 at most.
 */
export const DEFAULT_USERNAME_TEMPLATE =
  '{{ if (eq .Type "STS") }}{{ printf "svc-%s-%s" (unix_time) (random 20) | truncate 32 }}' +
  '{{ else }}{{ printf "svc-%s-%s-%s" (printf "%s-%s" (.DisplayName) (.PolicyName) | truncate 42) (unix_time) (random 20) | truncate 64 }}{{ end }}';

/** IAM and STS limits on generated names. */
const NAME_LIMITS = { IAM: 64, STS: 32 } as const;

/** What IAM accepts in user and session names; anything else becomes `_`. */
export function normalizeName(name: string): string {
  return name.replace(/[^a-zA-Z0-9+=,.@_-]/g, '_');
}

export class CloudEngine {
  private readonly clientCache = new ProviderClientCache();

  /** The mount's storage. */
  readonly storage: StorageView;

  constructor(
    readonly mount: MountInfo,
    readonly context: EngineContext,
  ) {
    this.storage = context.storage;
  }

  config(): Promise<RootConfig | null> {
    return CONFIG.get(this.storage, 'root');
  }

  async clients(): Promise<ProviderClients> {
    return this.clientCache.get(await this.config());
  }

  /**
   * A name for a new IAM user (`IAM`) or STS session (`STS`) from the configured template. A name
   * over the provider's limit is the template's fault, not the caller's: 500, as the spec says.
   */
  async generateName(req: Request, type: keyof typeof NAME_LIMITS, roleName: string): Promise<string> {
    const template = (await this.config())?.username_template || DEFAULT_USERNAME_TEMPLATE;
    let name: string;
    try {
      name = renderUsername(template, { Type: type, DisplayName: normalizeName(req.caller?.displayName || 'token'), PolicyName: normalizeName(roleName) });
    } catch (err) {
      if (err instanceof TemplateError) throw ServiceError.internal(`username_template: ${err.message}`);
      throw err;
    }
    if (name.length > NAME_LIMITS[type]) {
      throw ServiceError.internal(`the generated ${type === 'IAM' ? 'username' : 'STS name'} "${name}" is longer than ${NAME_LIMITS[type]} characters`);
    }
    return name;
  }

  close(): void {
    this.clientCache.close();
  }
}
