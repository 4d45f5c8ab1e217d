import { useState } from 'preact/hooks';
import { loadSession, saveSession, sealStatus, type Session } from './api';
import { ErrorMessage, Link, navigate, useLoad, useRoute } from './components';
import { AuthMethodsScreen, LeasesScreen, NamespacesScreen, TokensScreen } from './screens/access';
import { LoginScreen, NamespacePicker, OidcCallbackScreen, oidcCallbackMount } from './screens/login';
import { PoliciesScreen, PolicyScreen } from './screens/policies';
import { InitScreen, SealControls, UnsealScreen } from './screens/seal';
import { MountScreen, SecretsScreen } from './screens/secrets';
import { ToolsScreen } from './screens/tools';

const SECTIONS: [string, string][] = [
  ['secrets', 'Secrets'],
  ['access', 'Auth methods'],
  ['tokens', 'Tokens'],
  ['leases', 'Leases'],
  ['policies', 'Policies'],
  ['namespaces', 'Namespaces'],
  ['tools', 'Tools'],
  ['settings', 'Seal'],
];

/**
 * The whole UI: the server's seal state decides what comes first (initialize, unseal, sign in);
 * then the section the address names.
 */
export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession());
  const status = useLoad(sealStatus, []);
  const route = useRoute();
  const changeSession = (next: Session | undefined) => {
    saveSession(next);
    setSession(next);
  };

  let body;
  if (status.error) body = <ErrorMessage error={`the server did not answer: ${status.error}`} />;
  else if (!status.value) body = <p role="status">Connecting…</p>;
  else if (!status.value.initialized) body = <InitScreen status={status.value} onDone={status.reload} />;
  else if (status.value.sealed) body = <UnsealScreen status={status.value} onChange={status.reload} />;
  else if (!session) {
    const signedIn = (next: Session) => {
      changeSession(next);
      navigate('secrets');
    };
    const oidcMount = oidcCallbackMount(route);
    body = oidcMount ? <OidcCallbackScreen mount={oidcMount} onLogin={signedIn} /> : <LoginScreen onLogin={signedIn} />;
  }
  else body = <Screen route={route} session={session} onSealed={status.reload} />;

  return (
    <>
      <header>
        <h1>Secrets Service</h1>
        {session && status.value && !status.value.sealed && (
          <>
            <NamespacePicker session={session} onChange={(namespace) => changeSession({ ...session, namespace })} />
            <button type="button" onClick={() => changeSession(undefined)}>
              Sign out
            </button>
          </>
        )}
      </header>
      {session && status.value?.initialized && !status.value.sealed && (
        <nav aria-label="Sections">
          {SECTIONS.map(([to, label]) => (
            <Link to={to} current={route.split('/')[0] === to}>
              {label}
            </Link>
          ))}
        </nav>
      )}
      <main>{body}</main>
    </>
  );
}

function Screen({ route, session, onSealed }: { route: string; session: Session; onSealed: () => void }) {
  const [section, ...rest] = route.split('/');
  const tail = rest.join('/');
  switch (section) {
    case 'secrets':
      return tail ? <MountScreen session={session} route={tail} /> : <SecretsScreen session={session} />;
    case 'access':
      return <AuthMethodsScreen session={session} />;
    case 'tokens':
      return <TokensScreen session={session} />;
    case 'leases':
      return <LeasesScreen session={session} />;
    case 'policies':
      return tail ? <PolicyScreen session={session} name={tail} /> : <PoliciesScreen session={session} />;
    case 'namespaces':
      return <NamespacesScreen session={session} />;
    case 'tools':
      return <ToolsScreen session={session} />;
    case 'settings':
      return <SealControls session={session} onSealed={onSealed} />;
    default:
      return <SecretsScreen session={session} />;
  }
}
