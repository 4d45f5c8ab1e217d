import { useState } from 'preact/hooks';
import { call, listKeys, type Session } from '../api';
import { ErrorMessage, Field, Form, ItemList, JsonView, Link, navigate, Section, TextArea, useAction, useLoad } from '../components';

interface Props {
  session: Session;
  /** Mount path, e.g. "secret/". */
  mount: string;
  /** Path inside the mount: a directory ("" or ending in '/') or a secret. */
  rest: string;
}

/** KV version 2: browse directories, open a secret. */
export function KvScreen(props: Props) {
  return props.rest === '' || props.rest.endsWith('/') ? <KvDirectory {...props} /> : <KvSecret {...props} />;
}

/** Parses the JSON object a form holds as secret data; anything else is the user's mistake to see. */
function secretData(text: string): Record<string, unknown> {
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('secret data must be a JSON object, e.g. {"password": "..."}');
  return parsed as Record<string, unknown>;
}

function KvDirectory({ session, mount, rest }: Props) {
  const keys = useLoad(() => listKeys(`${mount}metadata/${rest}`, session), [mount, rest, session.namespace]);
  const create = useAction(async (values: Record<string, string>) => {
    const path = `${rest}${values.path.replace(/^\/+/, '')}`;
    await call('POST', `${mount}data/${path}`, { body: { data: secretData(values.data) }, session });
    navigate(`secrets/${mount}${path}`);
  });
  return (
    <>
      <Section title={`${mount}${rest}`}>
        <nav aria-label="Breadcrumb">
          <Link to={`secrets/${mount}`}>{mount}</Link>
          {rest
            .split('/')
            .filter(Boolean)
            .map((part, i, parts) => (
              <>
                {' / '}
                <Link to={`secrets/${mount}${parts.slice(0, i + 1).join('/')}/`}>{part}</Link>
              </>
            ))}
        </nav>
        <ErrorMessage error={keys.error} />
        {keys.value?.length === 0 && <p>No secrets here yet.</p>}
        <ItemList label="Secrets" items={keys.value} link={(key) => `secrets/${mount}${rest}${key}`} />
      </Section>
      <Section title="Create a secret">
        <Form label="Create a secret" submit="Save secret" onSubmit={(v) => void create.run(v)} busy={create.busy} error={create.error}>
          <Field label="Secret path" name="path" required />
          <TextArea label="Secret data (JSON)" name="data" value={'{\n  "key": "value"\n}'} required />
        </Form>
      </Section>
    </>
  );
}

interface Metadata {
  current_version: number;
  max_versions: number;
  cas_required: boolean;
  delete_version_after: string;
  custom_metadata: Record<string, string> | null;
  versions: Record<string, { created_time: string; deletion_time: string; destroyed: boolean }>;
}

function KvSecret({ session, mount, rest }: Props) {
  const [version, setVersion] = useState(0);
  const metadata = useLoad(async () => (await call('GET', `${mount}metadata/${rest}`, { session })).data as unknown as Metadata, [mount, rest, session.namespace]);
  const secret = useLoad(async () => {
    try {
      return (await call('GET', `${mount}data/${rest}${version ? `?version=${version}` : ''}`, { session })).data as { data: Record<string, unknown> | null; metadata: Record<string, unknown> };
    } catch {
      // A deleted or destroyed version reads as 404: its metadata tells which.
      return undefined;
    }
  }, [mount, rest, version, session.namespace]);
  const reload = () => {
    metadata.reload();
    secret.reload();
  };
  const edit = useAction(async (values: Record<string, string>) => {
    const cas = metadata.value?.current_version ?? 0;
    await call('POST', `${mount}data/${rest}`, { body: { data: secretData(values.data), options: { cas } }, session });
    setVersion(0);
    reload();
  });
  const versionAction = useAction(async (action: 'delete' | 'undelete' | 'destroy') => {
    const target = version || metadata.value?.current_version;
    await call(action === 'destroy' ? 'PUT' : 'POST', `${mount}${action}/${rest}`, { body: { versions: [target] }, session });
    reload();
  });
  const saveMetadata = useAction(async (values: Record<string, string>) => {
    const body = {
      max_versions: Number(values.max_versions || 0),
      cas_required: values.cas_required === 'true',
      delete_version_after: values.delete_version_after || '0s',
      custom_metadata: values.custom_metadata.trim() ? secretData(values.custom_metadata) : {},
    };
    await call('POST', `${mount}metadata/${rest}`, { body, session });
    reload();
  });
  const deleteAll = useAction(async () => {
    await call('DELETE', `${mount}metadata/${rest}`, { session });
    navigate(`secrets/${mount}${rest.slice(0, rest.lastIndexOf('/') + 1)}`);
  });
  const meta = metadata.value;
  const shown = version || meta?.current_version || 0;
  const versionState = meta?.versions[String(shown)];
  return (
    <>
      <Section title={`${mount}${rest}`}>
        <Link to={`secrets/${mount}${rest.slice(0, rest.lastIndexOf('/') + 1)}`}>Back to the list</Link>
        <ErrorMessage error={metadata.error} />
        {meta && (
          <label>
            <span>Version</span>
            <select value={String(shown)} onChange={(e) => setVersion(Number(e.currentTarget.value))}>
              {Object.keys(meta.versions)
                .reverse()
                .map((v) => (
                  <option value={v}>{`version ${v}${meta.versions[v].destroyed ? ' (destroyed)' : meta.versions[v].deletion_time ? ' (deleted)' : ''}`}</option>
                ))}
            </select>
          </label>
        )}
        {secret.value?.data ? (
          <JsonView label="Secret data" value={secret.value.data} />
        ) : (
          <p role="status">{versionState?.destroyed ? 'This version is destroyed.' : 'This version is deleted.'}</p>
        )}
        <div class="actions">
          <button type="button" onClick={() => void versionAction.run('delete')}>
            Delete version
          </button>
          <button type="button" onClick={() => void versionAction.run('undelete')}>
            Undelete version
          </button>
          <button type="button" onClick={() => void versionAction.run('destroy')}>
            Destroy version
          </button>
          <button type="button" onClick={() => void deleteAll.run()}>
            Delete all versions and metadata
          </button>
        </div>
        <ErrorMessage error={versionAction.error ?? deleteAll.error} />
      </Section>
      <Section title="Edit secret">
        <Form label="Edit secret" submit="Save new version" onSubmit={(v) => void edit.run(v)} busy={edit.busy} error={edit.error}>
          <TextArea label="Secret data (JSON)" name="data" value={JSON.stringify(secret.value?.data ?? {}, null, 2)} required />
        </Form>
      </Section>
      {meta && (
        <Section title="Metadata">
          <Form label="Metadata" submit="Save metadata" onSubmit={(v) => void saveMetadata.run(v)} busy={saveMetadata.busy} error={saveMetadata.error}>
            <Field label="Maximum versions (0: the mount's setting)" name="max_versions" type="number" value={String(meta.max_versions)} />
            <label class="check">
              <input type="checkbox" name="cas_required" value="true" defaultChecked={meta.cas_required} />
              <span>Require check-and-set</span>
            </label>
            <Field label="Delete versions after (duration, 0s: never)" name="delete_version_after" value={meta.delete_version_after} />
            <TextArea label="Custom metadata (JSON)" name="custom_metadata" rows={3} value={JSON.stringify(meta.custom_metadata ?? {}, null, 2)} />
          </Form>
        </Section>
      )}
    </>
  );
}
