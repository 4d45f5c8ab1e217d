/** A problem in a server configuration file. The message names the file, the stanza and the field,
 * and never contains a configured value that could be a secret. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
