import { call, listKeys, type Session } from '../api';
import { commaList, ErrorMessage, Field, Form, ItemList, JsonView, Section, Select, useAction, useLoad } from '../components';
import { visibleMounts } from './secrets';

/** Auth methods: those the token can see, and a form to enable one. */
export function AuthMethodsScreen({ session }: { session: Session }) {
  const methods = useLoad(() => visibleMounts(session, 'auth'), [session.namespace]);
  const enable = useAction(async (values: Record<string, string>) => {
    await call('POST', `sys/auth/${values.path.replace(/^\/+|\/+$/g, '')}`, { body: { type: values.type, description: values.description }, session });
    methods.reload();
  });
  return (
    <>
      <Section title="Auth methods">
        <ErrorMessage error={methods.error} />
        <ItemList label="Auth methods" items={methods.value?.map(([path, mount]) => `${path} (${mount.type})`)} />
      </Section>
      <Section title="Enable an auth method">
        <Form label="Enable an auth method" submit="Enable method" onSubmit={(v) => void enable.run(v)} busy={enable.busy} error={enable.error}>
          <Select label="Type" name="type" options={['userpass', 'approle']} />
          <Field label="Path" name="path" required />
          <Field label="Description" name="description" />
        </Form>
      </Section>
    </>
  );
}

/** Tokens: the current token, lookup by token or accessor, renew, revoke, create. */
export function TokensScreen({ session }: { session: Session }) {
  const self = useLoad(async () => (await call('GET', 'auth/token/lookup-self', { session })).data, [session.token]);
  const act = useAction(async (values: Record<string, string>) => {
    const byAccessor = values.kind === 'accessor';
    const body = byAccessor ? { accessor: values.value.trim() } : { token: values.value.trim() };
    const suffix = byAccessor ? '-accessor' : '';
    const answer = await call('POST', `auth/token/${values.action}${suffix}`, { body, session });
    return answer.data ?? answer.auth ?? `${values.action} done`;
  });
  const create = useAction(async (values: Record<string, string>) => {
    const body: Record<string, unknown> = { policies: commaList(values.policies), ttl: values.ttl || undefined, display_name: values.display_name || undefined };
    return (await call('POST', 'auth/token/create', { body, session })).auth;
  });
  return (
    <>
      <Section title="This token">
        <ErrorMessage error={self.error} />
        {self.value && <JsonView label="Token lookup" value={self.value} />}
      </Section>
      <Section title="Look up, renew or revoke a token">
        <Form label="Token operation" submit="Run" onSubmit={(v) => void act.run(v)} busy={act.busy} error={act.error}>
          <Select label="Operation" name="action" options={['lookup', 'renew', 'revoke']} />
          <Select label="Identify the token by" name="kind" options={['token', 'accessor']} />
          <Field label="Token or accessor" name="value" type="password" required />
        </Form>
        {act.result && <JsonView label="Token operation result" value={act.result} />}
      </Section>
      <Section title="Create a token">
        <Form label="Create a token" submit="Create token" onSubmit={(v) => void create.run(v)} busy={create.busy} error={create.error}>
          <Field label="Policies (comma-separated)" name="policies" />
          <Field label="TTL" name="ttl" placeholder="1h" />
          <Field label="Display name" name="display_name" />
        </Form>
        {create.result && <JsonView label="New token" value={create.result} />}
      </Section>
    </>
  );
}

/** Leases: list by prefix, look up, renew, revoke (by id or prefix). */
export function LeasesScreen({ session }: { session: Session }) {
  const list = useAction(async (values: Record<string, string>) => listKeys(`sys/leases/lookup/${values.prefix.replace(/^\/+/, '')}`, session));
  const act = useAction(async (values: Record<string, string>) => {
    const id = values.lease_id.trim();
    if (values.action === 'lookup') return (await call('PUT', 'sys/leases/lookup', { body: { lease_id: id }, session })).data;
    if (values.action === 'renew') return (await call('PUT', 'sys/leases/renew', { body: { lease_id: id }, session })).lease_duration;
    if (values.action === 'revoke-prefix') await call('PUT', `sys/leases/revoke-prefix/${id}`, { session });
    else await call('PUT', 'sys/leases/revoke', { body: { lease_id: id }, session });
    return `${values.action} done`;
  });
  return (
    <>
      <Section title="List leases">
        <Form label="List leases" submit="List" onSubmit={(v) => void list.run(v)} busy={list.busy} error={list.error}>
          <Field label="Prefix (e.g. database/creds/app/)" name="prefix" required />
        </Form>
        {list.result && <JsonView label="Leases" value={list.result} />}
      </Section>
      <Section title="Lease operation">
        <Form label="Lease operation" submit="Run" onSubmit={(v) => void act.run(v)} busy={act.busy} error={act.error}>
          <Select label="Operation" name="action" options={['lookup', 'renew', 'revoke', 'revoke-prefix']} />
          <Field label="Lease ID or prefix" name="lease_id" required />
        </Form>
        {act.result !== undefined && <JsonView label="Lease operation result" value={act.result} />}
      </Section>
    </>
  );
}

/** Namespaces below the current one: list, create, delete. */
export function NamespacesScreen({ session }: { session: Session }) {
  const children = useLoad(() => listKeys('sys/namespaces', session), [session.namespace]);
  const create = useAction(async (values: Record<string, string>) => {
    await call('POST', `sys/namespaces/${encodeURIComponent(values.name)}`, { session });
    children.reload();
  });
  const remove = useAction(async (name: string) => {
    await call('DELETE', `sys/namespaces/${encodeURIComponent(name.replace(/\/$/, ''))}`, { session });
    children.reload();
  });
  return (
    <Section title="Namespaces">
      <ErrorMessage error={children.error ?? remove.error} />
      <ItemList label="Namespaces" items={children.value} actions={[{ text: 'Delete', label: (name) => `Delete namespace ${name}`, run: (name) => void remove.run(name) }]} />
      <Form label="Create a namespace" submit="Create namespace" onSubmit={(v) => void create.run(v)} busy={create.busy} error={create.error}>
        <Field label="Namespace name" name="name" required />
      </Form>
    </Section>
  );
}
