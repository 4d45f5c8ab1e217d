import { call, listKeys, type Session } from '../api';
import { Checkbox, ErrorMessage, Field, Form, ItemList, JsonView, Link, navigate, Section, Select, TextArea, useAction, useLoad } from '../components';

const KEY_TYPES = ['aes256-gcm96', 'aes128-gcm96', 'chacha20-poly1305', 'ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'rsa-3072', 'rsa-4096', 'hmac'];
const EXPORT_TYPES = ['encryption-key', 'signing-key', 'hmac-key', 'public-key'];

/** UTF-8 text as base64, the way transit takes plaintext. */
function toBase64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

function fromBase64(text: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));
}

/** Transit: keys (list, create), and for one key: rotate, encrypt, decrypt, export when allowed. */
export function TransitScreen(props: { session: Session; mount: string; rest: string }) {
  const name = props.rest.startsWith('keys/') ? props.rest.slice('keys/'.length) : '';
  return name ? <TransitKey {...props} name={name} /> : <TransitKeys {...props} />;
}

function TransitKeys({ session, mount }: { session: Session; mount: string }) {
  const keys = useLoad(() => listKeys(`${mount}keys`, session), [mount, session.namespace]);
  const create = useAction(async (values: Record<string, string>) => {
    await call('POST', `${mount}keys/${encodeURIComponent(values.name)}`, { body: { type: values.type, exportable: values.exportable === 'true' }, session });
    navigate(`secrets/${mount}keys/${values.name}`);
  });
  return (
    <>
      <Section title={`${mount} keys`}>
        <ErrorMessage error={keys.error} />
        <ItemList label="Keys" items={keys.value} link={(key) => `secrets/${mount}keys/${key}`} />
      </Section>
      <Section title="Create a key">
        <Form label="Create a key" submit="Create key" onSubmit={(v) => void create.run(v)} busy={create.busy} error={create.error}>
          <Field label="Key name" name="name" required />
          <Select label="Key type" name="type" options={KEY_TYPES} />
          <Checkbox label="Exportable" name="exportable" />
        </Form>
      </Section>
    </>
  );
}

function TransitKey({ session, mount, name }: { session: Session; mount: string; name: string }) {
  const path = `${mount}keys/${encodeURIComponent(name)}`;
  const key = useLoad(async () => (await call('GET', path, { session })).data ?? {}, [path, session.namespace]);
  const rotate = useAction(async () => {
    await call('POST', `${path}/rotate`, { session });
    key.reload();
  });
  const encrypt = useAction(async (values: Record<string, string>) => {
    const answer = await call('POST', `${mount}encrypt/${encodeURIComponent(name)}`, { body: { plaintext: toBase64(values.plaintext) }, session });
    return answer.data?.ciphertext as string;
  });
  const decrypt = useAction(async (values: Record<string, string>) => {
    const answer = await call('POST', `${mount}decrypt/${encodeURIComponent(name)}`, { body: { ciphertext: values.ciphertext.trim() }, session });
    return fromBase64(answer.data?.plaintext as string);
  });
  const exported = useAction(async (values: Record<string, string>) => (await call('GET', `${mount}export/${values.type}/${encodeURIComponent(name)}`, { session })).data);
  return (
    <>
      <Section title={`Key ${name}`}>
        <Link to={`secrets/${mount}`}>Back to the keys</Link>
        <ErrorMessage error={key.error} />
        {key.value && <JsonView label="Key" value={key.value} />}
        <button type="button" onClick={() => void rotate.run()} disabled={rotate.busy}>
          Rotate key
        </button>
        <ErrorMessage error={rotate.error} />
      </Section>
      <Section title="Encrypt">
        <Form label="Encrypt" submit="Encrypt" onSubmit={(v) => void encrypt.run(v)} busy={encrypt.busy} error={encrypt.error}>
          <TextArea label="Plaintext" name="plaintext" rows={3} required />
        </Form>
        {encrypt.result && <JsonView label="Ciphertext" value={encrypt.result} />}
      </Section>
      <Section title="Decrypt">
        <Form label="Decrypt" submit="Decrypt" onSubmit={(v) => void decrypt.run(v)} busy={decrypt.busy} error={decrypt.error}>
          <TextArea label="Ciphertext" name="ciphertext" rows={3} required />
        </Form>
        {decrypt.result !== undefined && <JsonView label="Decrypted plaintext" value={decrypt.result} />}
      </Section>
      {key.value?.exportable === true && (
        <Section title="Export">
          <Form label="Export" submit="Export key" onSubmit={(v) => void exported.run(v)} busy={exported.busy} error={exported.error}>
            <Select label="Export type" name="type" options={EXPORT_TYPES} />
          </Form>
          {exported.result && <JsonView label="Exported key" value={exported.result} />}
        </Section>
      )}
    </>
  );
}
