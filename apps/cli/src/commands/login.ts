import { readFile } from 'node:fs/promises';
import { POD_SERVICE_ACCOUNT_TOKEN, type Envelope, type SvcClient } from '@svc/sdk';
import { UsageError } from './args';
import type { CliIO, Command, CommandContext } from './context';
import { println } from './context';
import { authRows, humanDuration, keyValueTable, output, printWarnings, type Row } from './format';
import { readAll, readHiddenLine } from './stdin';
import { storeToken } from './token-file';
import { parseData } from './data';
import { cloudLoginData } from './cloud-login';
import { oidcLogin } from './oidc-login';

/** What a login shows: the token and what it grants, in the auth block's shape. */
interface LoginResult {
  envelope: Envelope;
  token: string;
  rows: Row[];
}

export const command: Command = {
  args: '[TOKEN | K=V...]',
  summary:
    'Authenticate and store the token in ~/.svc-token for later commands: with a token (the default method, ' +
    'checked with lookup-self), or -method=userpass username=NAME [password=...|password=-], or any other ' +
    'method with its K=V login fields (e.g. -method=approle role_id=... secret_id=..., -method=jwt role=... jwt=@FILE), ' +
    'or -method=kubernetes role=... [jwt=@FILE] (in a pod, its service-account token), or -method=oidc [role=...] ' +
    '[port=8250] (prints the provider\'s URL and listens on localhost for its redirect), or -method=cloud ' +
    'role=... [header_value=...] [region=...] (signs with the provider\'s credentials).',
  flags: {
    method: { kind: 'string', description: 'auth method type: token (default), userpass, approle, kubernetes, jwt, oidc, cloud, ...' },
    path: { kind: 'string', description: 'where the auth method is mounted (default: the method name)' },
    'no-store': { kind: 'boolean', description: 'do not store the token in ~/.svc-token' },
    'token-only': { kind: 'boolean', description: 'print only the token, and do not store it' },
  },
  async run(ctx, { flags, positionals }) {
    const method = String(flags.method ?? 'token');
    const path = String(flags.path ?? method).replace(/^\/+|\/+$/g, '');
    const result = method === 'token' ? await tokenLogin(ctx, positionals) : await methodLogin(ctx, method, path, positionals);
    if (flags['token-only']) {
      println(ctx.io.stdout, result.token);
      return 0;
    }
    printWarnings(ctx, result.envelope);
    if (!flags['no-store']) {
      await storeToken(ctx.io.env, result.token);
      if (ctx.io.env.SVC_TOKEN) {
        println(ctx.io.stderr, 'WARNING! SVC_TOKEN is set: it takes precedence over the stored token until you unset it.\n');
      }
    }
    output(ctx, result.envelope, () =>
      [
        flags['no-store']
          ? 'Success! You are now authenticated. The token was not stored (-no-store): pass it in SVC_TOKEN.'
          : 'Success! You are now authenticated. The token below is stored in ~/.svc-token; later commands use it.',
        '',
        keyValueTable(result.rows),
      ].join('\n'),
    );
    return 0;
  },
};

/** `svc login [TOKEN|-]`: the token is checked with lookup-self before it is stored. */
async function tokenLogin(ctx: CommandContext, positionals: string[]): Promise<LoginResult> {
  if (positionals.length > 1) throw new UsageError('login with a token takes at most one TOKEN argument');
  const given = positionals[0]?.startsWith('token=') ? positionals[0].slice('token='.length) : positionals[0];
  const token = given === '-' ? (await readAll(ctx.io)).trim() : (given ?? (await prompted(ctx.io, 'Token (will be hidden): ', 'TOKEN')));
  if (!token) throw new UsageError('no token given');
  const envelope = await ctx.client.withToken(token).read('auth/token/lookup-self');
  const data = envelope?.data ?? {};
  return {
    envelope: envelope!,
    token,
    rows: [
      ['token', token],
      ['token_accessor', data.accessor],
      ['token_duration', Number(data.ttl ?? 0) === 0 ? '∞' : humanDuration(Number(data.ttl))],
      ['token_renewable', data.renewable],
      ['token_policies', data.policies],
      ['policies', data.policies],
      ...metaRows(data.meta as Record<string, string> | null),
    ],
  };
}

/** `svc login -method=NAME K=V...`: userpass takes the username into the path and the password hidden. */
async function methodLogin(ctx: CommandContext, method: string, path: string, positionals: string[]): Promise<LoginResult> {
  const given = await parseData(positionals, ctx.io);
  if (method === 'oidc') {
    const auth = await oidcLogin(ctx.io, ctx.client.withToken(undefined), path, given);
    return { envelope: { auth } as Envelope, token: auth.client_token, rows: authRows(auth) };
  }
  const data = method === 'cloud' ? await cloudLoginData(given, ctx.io.env) : method === 'kubernetes' ? await kubernetesLoginData(given) : given;
  const anonymous: SvcClient = ctx.client.withToken(undefined);
  let where = `auth/${path}/login`;
  if (method === 'userpass') {
    const { username } = data;
    if (typeof username !== 'string' || username === '') throw new UsageError('userpass login needs username=NAME');
    delete data.username;
    data.password ??= await prompted(ctx.io, 'Password (will be hidden): ', 'password=...');
    where += `/${encodeURIComponent(username)}`;
  }
  const envelope = await anonymous.write(where, data);
  const auth = envelope?.auth;
  if (!auth) throw new Error(`${where} answered without a token`);
  return {
    envelope: envelope!,
    token: auth.client_token,
    rows: authRows(auth),
  };
}

/** A kubernetes login without jwt=... runs in a pod: its service-account token is the pod's. */
async function kubernetesLoginData(data: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (typeof data.role !== 'string' || data.role === '') throw new UsageError('kubernetes login needs role=NAME');
  if (data.jwt !== undefined) return { ...data, jwt: String(data.jwt).trim() };
  try {
    return { ...data, jwt: (await readFile(POD_SERVICE_ACCOUNT_TOKEN, 'utf8')).trim() };
  } catch (err) {
    throw new UsageError(`no jwt=... given and no pod service-account token at ${POD_SERVICE_ACCOUNT_TOKEN} (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

/** A secret typed at a terminal without echo; anything else must pass it explicitly. */
async function prompted(io: CliIO, prompt: string, instead: string): Promise<string> {
  if (!io.stdin.isTTY) throw new UsageError(`stdin is not a terminal to prompt on: pass ${instead} (or - to read it from stdin)`);
  return readHiddenLine(io, prompt);
}

function metaRows(meta: Record<string, string> | null | undefined): Row[] {
  return Object.entries(meta ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => [`token_meta_${key}`, value]);
}
