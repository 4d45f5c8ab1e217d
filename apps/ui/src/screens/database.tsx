import { call, listKeys, type Session } from '../api';
import { commaList, ErrorMessage, Field, Form, ItemList, JsonView, lines, Section, Select, TextArea, useAction, useLoad } from '../components';

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
        <ItemList
          label="Connections"
          items={connections.value}
          actions={[
            { text: 'Read', label: (name) => `Read connection ${name}`, run: (name) => void inspect.run('config', name) },
            { text: 'Delete', label: (name) => `Delete connection ${name}`, run: (name) => void remove.run('config', name) },
          ]}
        />
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
        <ItemList
          label="Roles"
          items={roles.value}
          actions={[
            { text: 'Read', label: (name) => `Read role ${name}`, run: (name) => void inspect.run('roles', name) },
            { text: 'Generate credentials', label: (name) => `Generate credentials for ${name}`, run: (name) => void inspect.run('creds', name) },
            { text: 'Delete', label: (name) => `Delete role ${name}`, run: (name) => void remove.run('roles', name) },
          ]}
        />
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
