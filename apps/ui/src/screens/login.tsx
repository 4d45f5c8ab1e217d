import { useState } from 'preact/hooks';
import { call, type Session } from '../api';
import { ErrorMessage, Field, Form, Section, TextArea, useAction, useLoad } from '../components';

/** The method types this screen can sign in with, besides the mounts the server lists. */
const METHODS = ['token', 'userpass', 'approle', 'jwt', 'oidc'];

/** Where the identity provider sends the browser back: the same address as Vault's UI uses. */
const OIDC_CALLBACK = /^vault\/auth\/(.+)\/oidc\/callback$/;

/** What an OIDC sign-in remembers across the trip to the provider (this tab only). */
const PENDING_OIDC = 'svc-ui-oidc';

/** A choice of the method list: a method type at a mount path. */
interface Choice {
  type: string;
  mount: string;
}

/**
 * Login with a token or through an auth method at its mount path, in a namespace. The choices are
 * the auth mounts the server lists for sign-in (`listing_visibility = "unauth"`), then the method
 * types this screen knows at their default paths; OIDC signs in by redirect to the provider.
 */
export function LoginScreen(props: { onLogin: (session: Session) => void }) {
  const visible = useLoad(async () => {
    const answer = await call('GET', 'sys/internal/ui/mounts');
    return Object.entries((answer.data?.auth ?? {}) as Record<string, { type: string }>)
      .filter(([, mount]) => METHODS.includes(mount.type))
      .map(([path, mount]): Choice => ({ type: mount.type, mount: path.replace(/\/+$/, '') }));
  }, []);
  const choices: Choice[] = [...(visible.value ?? []), ...METHODS.map((type) => ({ type, mount: type }))];
  const [chosen, setChosen] = useState<string | undefined>();
  const { type: method, mount: defaultMount } = choices.find((choice) => choiceKey(choice) === chosen) ?? choices[0];
  const login = useAction(async (values: Record<string, string>) => {
    const namespace = normalizeNamespace(values.namespace);
    if (method === 'token') {
      const session = { token: values.token.trim(), namespace, home: namespace };
      await call('GET', 'auth/token/lookup-self', { session });
      return props.onLogin(session);
    }
    const mount = (values.mount || defaultMount).replace(/^\/+|\/+$/g, '');
    const anonymous = { token: '', namespace, home: namespace };
    if (method === 'oidc') return startOidc(mount, values.role, anonymous);
    const [path, body] = loginRequest(method, mount, values);
    const answer = await call('PUT', path, { body, session: anonymous });
    const token = answer.auth?.client_token as string | undefined;
    if (!token) throw new Error('the login answered no token');
    props.onLogin({ token, namespace, home: namespace });
  });
  return (
    <Section title="Sign in">
      <label>
        <span>Method</span>
        <select name="method" value={choiceKey({ type: method, mount: defaultMount })} onChange={(e) => setChosen(e.currentTarget.value)}>
          {choices.map((choice, index) => (
            <option value={choiceKey(choice)}>{index < (visible.value?.length ?? 0) ? `${choice.mount}/ (${choice.type})` : choice.type}</option>
          ))}
        </select>
      </label>
      <Form label="Sign in" submit={method === 'oidc' ? 'Sign in with the identity provider' : 'Sign in'} onSubmit={(v) => void login.run(v)} busy={login.busy} error={login.error}>
        <Field label="Namespace" name="namespace" placeholder="root" />
        {method === 'token' && <Field label="Token" name="token" type="password" required />}
        {method !== 'token' && <Field label="Mount path" name="mount" value={defaultMount} />}
        {method === 'userpass' && <Field label="Username" name="username" required />}
        {method === 'userpass' && <Field label="Password" name="password" type="password" required />}
        {method === 'approle' && <Field label="Role ID" name="role_id" required />}
        {method === 'approle' && <Field label="Secret ID" name="secret_id" type="password" />}
        {(method === 'jwt' || method === 'oidc') && <Field label="Role" name="role" placeholder="the mount's default role" />}
        {method === 'jwt' && <TextArea label="JWT" name="jwt" rows={4} required />}
      </Form>
    </Section>
  );
}

const choiceKey = (choice: Choice) => `${choice.type}:${choice.mount}`;

/** The login path and body of a method that answers at once. */
function loginRequest(method: string, mount: string, values: Record<string, string>): [string, Record<string, string>] {
  switch (method) {
    case 'userpass':
      return [`auth/${mount}/login/${encodeURIComponent(values.username)}`, { password: values.password }];
    case 'jwt':
      return [`auth/${mount}/login`, { jwt: values.jwt.trim(), ...(values.role && { role: values.role }) }];
    default:
      return [`auth/${mount}/login`, { role_id: values.role_id, secret_id: values.secret_id }];
  }
}

/** Asks the method for the provider's address and goes there; the provider sends the browser back to OidcCallbackScreen. */
async function startOidc(mount: string, role: string, session: Session): Promise<void> {
  const redirectUri = `${location.origin}/ui/vault/auth/${mount}/oidc/callback`;
  const answer = await call('PUT', `auth/${mount}/oidc/auth_url`, { body: { redirect_uri: redirectUri, ...(role && { role }) }, session });
  const authUrl = answer.data?.auth_url as string | undefined;
  if (!authUrl) throw new Error(`the method answered no provider address: is ${redirectUri} among the role's allowed_redirect_uris?`);
  sessionStorage.setItem(PENDING_OIDC, JSON.stringify({ namespace: session.namespace }));
  location.assign(authUrl);
}

/** The mount of an OIDC callback address ("vault/auth/<mount>/oidc/callback"), if the route is one. */
export function oidcCallbackMount(route: string): string | undefined {
  return OIDC_CALLBACK.exec(route)?.[1];
}

/** Where the provider sends the browser back: the state and code become a token. */
export function OidcCallbackScreen(props: { mount: string; onLogin: (session: Session) => void }) {
  const finished = useLoad(async () => {
    const pending = JSON.parse(sessionStorage.getItem(PENDING_OIDC) ?? '{}') as { namespace?: string };
    sessionStorage.removeItem(PENDING_OIDC);
    const namespace = pending.namespace ?? '';
    const query = new URLSearchParams(location.search);
    const error = query.get('error');
    if (error) throw new Error(`the identity provider refused the sign-in: ${query.get('error_description') ?? error}`);
    const params = new URLSearchParams({ state: query.get('state') ?? '', code: query.get('code') ?? '' });
    const answer = await call('GET', `auth/${props.mount}/oidc/callback?${params}`, { session: { token: '', namespace, home: namespace } });
    const token = answer.auth?.client_token as string | undefined;
    if (!token) throw new Error('the sign-in answered no token');
    props.onLogin({ token, namespace, home: namespace });
  }, []);
  return (
    <Section title="Signing in">
      {finished.error ? <ErrorMessage error={finished.error} /> : <p role="status">Completing the sign-in…</p>}
      {finished.error && <a href="/ui/">Back to the sign-in</a>}
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
