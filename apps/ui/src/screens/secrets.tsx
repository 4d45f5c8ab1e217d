import { call, type Session } from '../api';
import { ErrorMessage, Field, Form, JsonView, Link, navigate, Section, Select, useAction, useLoad } from '../components';
import { DatabaseScreen } from './database';
import { KvScreen } from './kv';
import { TransitScreen } from './transit';

export interface MountView {
  type: string;
  description: string;
  options: Record<string, string> | null;
}

/** The mounts the token can see (sys/internal/ui/mounts), by path. */
export async function visibleMounts(session: Session, table: 'secret' | 'auth'): Promise<[string, MountView][]> {
  const answer = await call('GET', 'sys/internal/ui/mounts', { session });
  return Object.entries((answer.data?.[table] ?? {}) as Record<string, MountView>).sort(([a], [b]) => a.localeCompare(b));
}

/** Secrets engines: the visible mounts, and a form to enable one. */
export function SecretsScreen(props: { session: Session }) {
  const mounts = useLoad(() => visibleMounts(props.session, 'secret'), [props.session.namespace]);
  const enable = useAction(async (values: Record<string, string>) => {
    const path = values.path.replace(/^\/+|\/+$/g, '');
    const body: Record<string, unknown> = { type: values.type, description: values.description };
    if (values.type === 'kv') body.options = { version: values.version };
    await call('POST', `sys/mounts/${path}`, { body, session: props.session });
    mounts.reload();
  });
  return (
    <>
      <Section title="Secrets engines">
        <ErrorMessage error={mounts.error} />
        <table>
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Type</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {(mounts.value ?? []).map(([path, mount]) => (
              <tr>
                <td>
                  <Link to={`secrets/${path}`}>{path}</Link>
                </td>
                <td>{mount.type + (mount.type === 'kv' ? ` v${mount.options?.version ?? '1'}` : '')}</td>
                <td>{mount.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      <Section title="Enable a secrets engine">
        <Form label="Enable a secrets engine" submit="Enable engine" onSubmit={(v) => void enable.run(v)} busy={enable.busy} error={enable.error}>
          <Select label="Type" name="type" options={['kv', 'transit', 'database', 'cloud']} />
          <Field label="Path" name="path" required />
          <Select label="KV version" name="version" options={['2', '1']} />
          <Field label="Description" name="description" />
        </Form>
      </Section>
    </>
  );
}

/** One mount's screen, by its type; `rest` is what follows the mount path in the UI address. */
export function MountScreen(props: { session: Session; route: string }) {
  const mounts = useLoad(() => visibleMounts(props.session, 'secret'), [props.session.namespace]);
  if (mounts.error) return <ErrorMessage error={mounts.error} />;
  if (!mounts.value) return <p role="status">Loading…</p>;
  const found = mounts.value.filter(([path]) => `${props.route}/`.startsWith(path)).sort(([a], [b]) => b.length - a.length)[0];
  if (!found) return <ErrorMessage error={`no secrets engine the token can see at "${props.route}"`} />;
  const [path, mount] = found;
  const rest = props.route.slice(path.length);
  if (mount.type === 'kv' && mount.options?.version === '2') return <KvScreen session={props.session} mount={path} rest={rest} />;
  if (mount.type === 'transit') return <TransitScreen session={props.session} mount={path} rest={rest} />;
  if (mount.type === 'database') return <DatabaseScreen session={props.session} mount={path} />;
  return <PathScreen session={props.session} mount={path} type={mount.type} />;
}

/** Any other engine: read, list, write or delete a path under the mount, with JSON bodies. */
export function PathScreen(props: { session: Session; mount: string; type: string }) {
  const request = useAction(async (values: Record<string, string>) => {
    const path = `${props.mount}${values.path.replace(/^\/+/, '')}`;
    const method = values.operation as 'GET' | 'LIST' | 'PUT' | 'DELETE';
    const body = method === 'PUT' && values.body.trim() ? (JSON.parse(values.body) as unknown) : undefined;
    return call(method, path, { body, session: props.session });
  });
  return (
    <Section title={`${props.mount} (${props.type})`}>
      <Form label="Request" submit="Send request" onSubmit={(v) => void request.run(v)} busy={request.busy} error={request.error}>
        <Select label="Operation" name="operation" options={['GET', 'LIST', 'PUT', 'DELETE']} />
        <Field label={`Path under ${props.mount}`} name="path" />
        <label>
          <span>JSON body (for PUT)</span>
          <textarea name="body" rows={5} spellcheck={false} />
        </label>
      </Form>
      {request.result && <JsonView label="Answer" value={request.result} />}
      <button type="button" onClick={() => navigate('secrets')}>
        Back to secrets engines
      </button>
    </Section>
  );
}
