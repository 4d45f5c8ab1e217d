import { useState } from 'preact/hooks';
import { call, type Session } from '../api';
import { Field, Form, Section, useAction, useLoad } from '../components';

const METHODS = ['token', 'userpass', 'approle'];

/**
 * Login with a token or through an auth method (userpass, approle) at its mount path, in a
 * namespace. The auth methods offered are those the server lists as visible without a token,
 * besides the three built in here.
 */
export function LoginScreen(props: { onLogin: (session: Session) => void }) {
  const [method, setMethod] = useState('token');
  const visible = useLoad(async () => {
    const answer = await call('GET', 'sys/internal/ui/mounts');
    return Object.entries((answer.data?.auth ?? {}) as Record<string, { type: string }>);
  }, []);
  const login = useAction(async (values: Record<string, string>) => {
    const namespace = normalizeNamespace(values.namespace);
    if (method === 'token') {
      const session = { token: values.token.trim(), namespace, home: namespace };
      await call('GET', 'auth/token/lookup-self', { session });
      return props.onLogin(session);
    }
    const mount = (values.mount || method).replace(/^\/+|\/+$/g, '');
    const body = method === 'userpass' ? { password: values.password } : { role_id: values.role_id, secret_id: values.secret_id };
    const path = method === 'userpass' ? `auth/${mount}/login/${encodeURIComponent(values.username)}` : `auth/${mount}/login`;
    const answer = await call('PUT', path, { body, session: { token: '', namespace, home: namespace } });
    const token = answer.auth?.client_token as string | undefined;
    if (!token) throw new Error('the login answered no token');
    props.onLogin({ token, namespace, home: namespace });
  });
  return (
    <Section title="Sign in">
      <label>
        <span>Method</span>
        <select name="method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
          {METHODS.map((m) => (
            <option value={m}>{m}</option>
          ))}
        </select>
      </label>
      {visible.value && visible.value.length > 0 && (
        <p>
          Auth methods listed for sign-in:{' '}
          {visible.value.map(([path, mount]) => (
            <code>{`${path} (${mount.type}) `}</code>
          ))}
        </p>
      )}
      <Form label="Sign in" submit="Sign in" onSubmit={(v) => void login.run(v)} busy={login.busy} error={login.error}>
        <Field label="Namespace" name="namespace" placeholder="root" />
        {method === 'token' && <Field label="Token" name="token" type="password" required />}
        {method !== 'token' && <Field label="Mount path" name="mount" value={method} />}
        {method === 'userpass' && <Field label="Username" name="username" required />}
        {method === 'userpass' && <Field label="Password" name="password" type="password" required />}
        {method === 'approle' && <Field label="Role ID" name="role_id" required />}
        {method === 'approle' && <Field label="Secret ID" name="secret_id" type="password" />}
      </Form>
    </Section>
  );
}

/** "" for the root namespace, otherwise "a/b/". */
export function normalizeNamespace(text: string | undefined): string {
  const trimmed = (text ?? '').trim().replace(/^\/+|\/+$/g, '');
  return trimmed === '' || trimmed === 'root' ? '' : `${trimmed}/`;
}

/** Switches the namespace the UI works in among those the token reaches. */
export function NamespacePicker(props: { session: Session; onChange: (namespace: string) => void }) {
  const home = props.session.home;
  const below = useLoad(async () => {
    const answer = await call('GET', 'sys/internal/ui/namespaces', { session: { ...props.session, namespace: home } });
    return (answer.data?.keys as string[] | undefined) ?? [];
  }, [props.session.token]);
  const options = [home.replace(/\/$/, '') || 'root', ...(below.value ?? []).map((ns) => `${home}${ns}`.replace(/\/$/, ''))];
  const current = props.session.namespace.replace(/\/$/, '') || 'root';
  if (!options.includes(current)) options.push(current);
  return (
    <label class="namespace">
      <span>Namespace</span>
      <select value={current} onChange={(e) => props.onChange(normalizeNamespace(e.currentTarget.value))}>
        {options.map((ns) => (
          <option value={ns}>{ns}</option>
        ))}
      </select>
    </label>
  );
}
