import { call, listKeys, type Session } from '../api';
import { commaList, ErrorMessage, Field, Form, ItemList, JsonView, Link, navigate, Section, TextArea, useAction, useLoad } from '../components';

/** ACL policies: list, create, and the capabilities check of the current token. */
export function PoliciesScreen({ session }: { session: Session }) {
  const policies = useLoad(() => listKeys('sys/policies/acl', session), [session.namespace]);
  const create = useAction(async (values: Record<string, string>) => {
    await call('PUT', `sys/policies/acl/${encodeURIComponent(values.name)}`, { body: { policy: values.policy }, session });
    navigate(`policies/${values.name}`);
  });
  const check = useAction(async (values: Record<string, string>) => {
    const answer = await call('POST', 'sys/capabilities-self', { body: { paths: commaList(values.paths) }, session });
    const { capabilities: _single, ...byPath } = answer.data ?? {};
    return byPath;
  });
  return (
    <>
      <Section title="ACL policies">
        <ErrorMessage error={policies.error} />
        <ItemList label="Policies" items={policies.value} link={(name) => `policies/${name}`} />
      </Section>
      <Section title="Create a policy">
        <Form label="Create a policy" submit="Create policy" onSubmit={(v) => void create.run(v)} busy={create.busy} error={create.error}>
          <Field label="Policy name" name="name" required />
          <TextArea label="Policy (HCL)" name="policy" rows={8} value={'path "secret/data/*" {\n  capabilities = ["read"]\n}'} required />
        </Form>
      </Section>
      <Section title="Check capabilities">
        <Form label="Check capabilities" submit="Check" onSubmit={(v) => void check.run(v)} busy={check.busy} error={check.error}>
          <Field label="Paths (comma-separated)" name="paths" required />
        </Form>
        {check.result && <JsonView label="Capabilities" value={check.result} />}
      </Section>
    </>
  );
}

/** One policy: its HCL, editable (root and default cannot be deleted). */
export function PolicyScreen({ session, name }: { session: Session; name: string }) {
  const path = `sys/policies/acl/${encodeURIComponent(name)}`;
  const policy = useLoad(async () => (await call('GET', path, { session })).data?.policy as string, [path, session.namespace]);
  const save = useAction(async (values: Record<string, string>) => {
    await call('PUT', path, { body: { policy: values.policy }, session });
    policy.reload();
    return 'Policy saved.';
  });
  const remove = useAction(async () => {
    await call('DELETE', path, { session });
    navigate('policies');
  });
  return (
    <Section title={`Policy ${name}`}>
      <Link to="policies">Back to the policies</Link>
      <ErrorMessage error={policy.error} />
      {policy.value !== undefined && (
        <Form label="Edit policy" submit="Save policy" onSubmit={(v) => void save.run(v)} busy={save.busy} error={save.error}>
          <TextArea label="Policy (HCL)" name="policy" rows={14} value={policy.value} required />
        </Form>
      )}
      {save.result && <p role="status">{save.result}</p>}
      {name !== 'root' && name !== 'default' && (
        <button type="button" onClick={() => void remove.run()}>
          Delete policy
        </button>
      )}
      <ErrorMessage error={remove.error} />
    </Section>
  );
}
