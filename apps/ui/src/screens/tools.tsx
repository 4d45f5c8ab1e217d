import { call, type Session } from '../api';
import { Field, Form, JsonView, Section, Select, TextArea, useAction } from '../components';

/** Response wrapping (wrap, lookup, unwrap, rewrap), random bytes and hashes. */
export function ToolsScreen({ session }: { session: Session }) {
  const wrap = useAction(async (values: Record<string, string>) => {
    const answer = await call('POST', 'sys/wrapping/wrap', { body: JSON.parse(values.data) as unknown, session, wrapTtl: values.ttl });
    return answer.wrap_info;
  });
  const wrapping = useAction(async (values: Record<string, string>) => {
    const token = values.token.trim();
    if (values.action === 'unwrap') return (await call('POST', 'sys/wrapping/unwrap', { token, session })).data;
    const answer = await call('POST', `sys/wrapping/${values.action}`, { body: { token }, session });
    return values.action === 'rewrap' ? answer.wrap_info : answer.data;
  });
  const random = useAction(async (values: Record<string, string>) => {
    const answer = await call('POST', 'sys/tools/random', { body: { bytes: Number(values.bytes), format: values.format }, session });
    return answer.data?.random_bytes;
  });
  const hash = useAction(async (values: Record<string, string>) => {
    const input = btoa(String.fromCharCode(...new TextEncoder().encode(values.input)));
    const answer = await call('POST', 'sys/tools/hash', { body: { input, algorithm: values.algorithm, format: values.format }, session });
    return answer.data?.sum;
  });
  return (
    <>
      <Section title="Wrap">
        <Form label="Wrap" submit="Wrap data" onSubmit={(v) => void wrap.run(v)} busy={wrap.busy} error={wrap.error}>
          <TextArea label="Data to wrap (JSON)" name="data" rows={4} value={'{\n  "key": "value"\n}'} required />
          <Field label="Wrapping TTL" name="ttl" value="5m" required />
        </Form>
        {wrap.result && <JsonView label="Wrapping token" value={wrap.result} />}
      </Section>
      <Section title="Lookup, unwrap or rewrap">
        <Form label="Wrapping token operation" submit="Run" onSubmit={(v) => void wrapping.run(v)} busy={wrapping.busy} error={wrapping.error}>
          <Select label="Operation" name="action" options={['lookup', 'unwrap', 'rewrap']} />
          <Field label="Wrapping token" name="token" type="password" required />
        </Form>
        {wrapping.result && <JsonView label="Wrapping result" value={wrapping.result} />}
      </Section>
      <Section title="Random bytes">
        <Form label="Random bytes" submit="Generate" onSubmit={(v) => void random.run(v)} busy={random.busy} error={random.error}>
          <Field label="Number of bytes" name="bytes" type="number" value="32" />
          <Select label="Output format" name="format" options={['base64', 'hex']} />
        </Form>
        {random.result !== undefined && <JsonView label="Random bytes result" value={random.result} />}
      </Section>
      <Section title="Hash">
        <Form label="Hash" submit="Hash" onSubmit={(v) => void hash.run(v)} busy={hash.busy} error={hash.error}>
          <TextArea label="Input" name="input" rows={3} required />
          <Select label="Algorithm" name="algorithm" options={['sha2-256', 'sha2-224', 'sha2-384', 'sha2-512', 'sha3-256', 'sha3-512']} />
          <Select label="Hash format" name="format" options={['hex', 'base64']} />
        </Form>
        {hash.result !== undefined && <JsonView label="Hash result" value={hash.result} />}
      </Section>
    </>
  );
}
