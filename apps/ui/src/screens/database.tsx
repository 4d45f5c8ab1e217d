import { call, listKeys, type Session } from '../api';
import { commaList, ErrorMessage, Field, Form, JsonView, lines, Section, Select, TextArea, useAction, useLoad } from '../components';

const PLUGINS = ['postgresql-database-plugin', 'mysql-database-plugin', 'redis-database-plugin'];

/** Database engine: connections and roles (list, write, read, delete), and credentials for a role. */
export function DatabaseScreen({ session, mount }: { session: Session; mount: string }) {
  const connections = useLoad(() => listKeys(`${mount}config`, session), [mount, session.namespace]);
  const roles = useLoad(() => listKeys(`${mount}roles`, session), [mount, session.namespace]);
  const writeConnection = useAction(async (values: Record<string, string>) => {
    const body = {
      plugin_name: values.plugin_name,
      connection_url: values.connection_url,
      username: values.username,
      password: values.password,
      allowed_roles: commaList(values.allowed_roles),
    };
    await call('POST', `${mount}config/${encodeURIComponent(values.name)}`, { body, session });
    connections.reload();
  });
  const writeRole = useAction(async (values: Record<string, string>) => {
    const body = {
      db_name: values.db_name,
      creation_statements: lines(values.creation_statements),
      default_ttl: values.default_ttl,
      max_ttl: values.max_ttl,
    };
    await call('POST', `${mount}roles/${encodeURIComponent(values.name)}`, { body, session });
    roles.reload();
  });
  const inspect = useAction(async (kind: 'config' | 'roles' | 'creds', name: string) => (await call('GET', `${mount}${kind}/${encodeURIComponent(name)}`, { session })).data);
  const remove = useAction(async (kind: 'config' | 'roles', name: string) => {
    await call('DELETE', `${mount}${kind}/${encodeURIComponent(name)}`, { session });
    (kind === 'config' ? connections : roles).reload();
  });
  return (
    <>
      <Section title={`${mount} connections`}>
        <ErrorMessage error={connections.error} />
        <ul aria-label="Connections">
          {(connections.value ?? []).map((name) => (
            <li>
              {name}{' '}
              <button type="button" onClick={() => void inspect.run('config', name)} aria-label={`Read connection ${name}`}>
                Read
              </button>
              <button type="button" onClick={() => void remove.run('config', name)} aria-label={`Delete connection ${name}`}>
                Delete
              </button>
            </li>
          ))}
        </ul>
        <Form label="Write a connection" submit="Save connection" onSubmit={(v) => void writeConnection.run(v)} busy={writeConnection.busy} error={writeConnection.error}>
          <Field label="Connection name" name="name" required />
          <Select label="Plugin" name="plugin_name" options={PLUGINS} />
          <Field label="Connection URL" name="connection_url" placeholder="postgresql://{{username}}:{{password}}@host:5432/db" />
          <Field label="Username" name="username" />
          <Field label="Password" name="password" type="password" />
          <Field label="Allowed roles (comma-separated)" name="allowed_roles" />
        </Form>
      </Section>
      <Section title={`${mount} roles`}>
        <ErrorMessage error={roles.error} />
        <ul aria-label="Roles">
          {(roles.value ?? []).map((name) => (
            <li>
              {name}{' '}
              <button type="button" onClick={() => void inspect.run('roles', name)} aria-label={`Read role ${name}`}>
                Read
              </button>
              <button type="button" onClick={() => void inspect.run('creds', name)} aria-label={`Generate credentials for ${name}`}>
                Generate credentials
              </button>
              <button type="button" onClick={() => void remove.run('roles', name)} aria-label={`Delete role ${name}`}>
                Delete
              </button>
            </li>
          ))}
        </ul>
        <Form label="Write a role" submit="Save role" onSubmit={(v) => void writeRole.run(v)} busy={writeRole.busy} error={writeRole.error}>
          <Field label="Role name" name="name" required />
          <Field label="Connection" name="db_name" required />
          <TextArea label="Creation statements (one per line)" name="creation_statements" rows={4} />
          <Field label="Default TTL" name="default_ttl" value="1h" />
          <Field label="Maximum TTL" name="max_ttl" value="24h" />
        </Form>
      </Section>
      <ErrorMessage error={inspect.error ?? remove.error} />
      {inspect.result && <JsonView label="Answer" value={inspect.result} />}
    </>
  );
}
