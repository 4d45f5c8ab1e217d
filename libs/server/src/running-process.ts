import type { Logger } from 'pino';
import type { ServerConfig } from '@svc/config';
import type { Core } from '@svc/core';

/** A started server process (a gateway, an engine service, a gateway workers' primary), as its command sees it. */
export interface RunningProcess {
  logger: Logger;
  /** Addresses the HTTP listeners bound (gateway only). */
  addresses: string[];
  core?: Core;
  /**
   * What Vault does on SIGHUP: reopens the audit files (log rotation) and, given the configuration
   * read again, applies its log level; logs what it reloaded.
   */
  reload(config?: ServerConfig): Promise<void>;
  stop(): Promise<void>;
}
