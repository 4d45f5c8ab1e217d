import { ProviderError, providerFailure, withoutSecrets, type SecretStore } from './secret-store';

const DEFAULT_API = 'https://api.vercel.com';

interface EnvironmentVariable {
  id: string;
  key: string;
}

/**
 * webhost-project destinations: a project's environment variables, through the web host's REST
 * API (its SDK is not used: the API is four calls). Values are written encrypted-at-rest
 * (`type: "encrypted"`) for the destination's deployment environments; `upsert=true` replaces a
 * variable of the same key.
 */
export function webhostEnvironment(details: Record<string, unknown>, endpoint: string | undefined): SecretStore {
  const token = String(details.access_token ?? '');
  const project = encodeURIComponent(String(details.project_id ?? ''));
  const teamId = String(details.team_id ?? '');
  const targets = (details.deployment_environments as string[] | undefined) ?? [];
  const base = (endpoint || DEFAULT_API).replace(/\/+$/, '');
  const url = (path: string, query: Record<string, string> = {}) => {
    const params = new URLSearchParams({ ...query, ...(teamId ? { teamId } : {}) }).toString();
    return `${base}${path}${params ? `?${params}` : ''}`;
  };
  const call = async (signal: AbortSignal, method: string, target: string, body?: unknown): Promise<unknown> => {
    let response: Response;
    let text: string;
    try {
      response = await fetch(target, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      // The body too arrives under the signal: a provider that stalls mid-answer is cut off as well.
      text = await response.text();
    } catch (err) {
      throw providerFailure(undefined, withoutSecrets((err as Error).message, [token]));
    }
    if (!response.ok) {
      const message = (() => {
        try {
          const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
          return [parsed.error?.code, parsed.error?.message].filter(Boolean).join(': ');
        } catch {
          return '';
        }
      })();
      throw providerFailure(response.status, withoutSecrets(message || response.statusText, [token]));
    }
    return text ? (JSON.parse(text) as unknown) : undefined;
  };
  return {
    async upsert(name, value, signal) {
      await call(signal, 'POST', url(`/v10/projects/${project}/env`, { upsert: 'true' }), { key: name, value, type: 'encrypted', target: targets });
    },
    async remove(name, signal) {
      const listed = (await call(signal, 'GET', url(`/v9/projects/${project}/env`))) as { envs?: EnvironmentVariable[] } | undefined;
      for (const variable of listed?.envs?.filter((env) => env.key === name) ?? []) {
        try {
          await call(signal, 'DELETE', url(`/v9/projects/${project}/env/${encodeURIComponent(variable.id)}`));
        } catch (err) {
          // Deleted meanwhile by someone else: what was asked for is done.
          if (!(err instanceof ProviderError && err.status === 404)) throw err;
        }
      }
    },
    close: () => undefined,
  };
}
