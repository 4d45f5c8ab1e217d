/** Statement handling shared by the SQL plugins: splitting, templating, connection URL templating. */
import type { FieldMap } from '@svc/framework';
import type { PluginCredential } from './plugin';

export interface StatementValues {
  name: string;
  credential?: PluginCredential;
  expiration?: string;
}

/**
 * Splits each statement on ';' (a role may put several in one string, as Vault allows) and fills
 * `{{name}}` (alias `{{username}}`), `{{password}}`, `{{public_key}}` and `{{expiration}}`. Splitting
 * happens before templating so a password holding ';' stays whole.
 */
export function renderStatements(statements: string[], values: StatementValues): string[] {
  const replacements: Record<string, string | undefined> = {
    name: values.name,
    username: values.name,
    password: values.credential?.password,
    public_key: values.credential?.publicKey,
    expiration: values.expiration,
  };
  return statements
    .flatMap((statement) => statement.split(';'))
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '')
    .map((statement) =>
      statement.replace(/\{\{\s*(\w+)\s*\}\}/g, (placeholder, key: string) => replacements[key] ?? placeholder),
    );
}

/** `{{username}}` and `{{password}}` in a connection URL, percent-encoded unless escaping is disabled. */
export function renderConnectionUrl(url: string, username: string, password: string, disableEscaping: boolean): string {
  const encode = disableEscaping ? (value: string) => value : encodeURIComponent;
  return url
    .replace(/\{\{\s*username\s*\}\}/g, () => encode(username))
    .replace(/\{\{\s*password\s*\}\}/g, () => encode(password));
}

/** A PostgreSQL timestamptz literal in UTC, for `{{expiration}}`. */
export function sqlTimestamp(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}+00:00`;
}

/** Connection fields both SQL plugins take. */
export const SQL_CONNECTION_FIELDS: FieldMap = {
  connection_url: {
    type: 'string',
    description: 'Connection URL; may template `{{username}}` and `{{password}}` (PostgreSQL: postgresql://..., MySQL: user:pass@tcp(host:port)/ or mysql://...).',
  },
  max_open_connections: { type: 'int', default: 4, description: 'Most connections this service replica opens to the database.' },
};

/** Runs statements in order on one connection, inside a transaction where the database has them. */
export interface StatementRunner {
  run(statements: string[]): Promise<void>;
}

/**
 * Rollback after a failed creation: the role's rollback statements if it has them, else the
 * plugin's own cleanup. Its failure is swallowed: the creation error is the one worth reporting.
 */
export async function rollBack(rollbackStatements: string[], values: StatementValues, runner: StatementRunner, fallback: () => Promise<void>): Promise<void> {
  const statements = renderStatements(rollbackStatements, values);
  await (statements.length > 0 ? runner.run(statements) : fallback()).catch(() => undefined);
}
