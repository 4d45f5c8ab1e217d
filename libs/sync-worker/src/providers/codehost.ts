import type { Octokit } from '@octokit/rest';
import type * as Sodium from 'libsodium-wrappers';
import { providerFailure, withoutSecrets, type SecretStore } from './secret-store';

const DEFAULT_API = 'https://api.github.com';

let modules: Promise<{ Octokit: typeof Octokit; sodium: typeof Sodium }> | undefined;

/** Loaded on first use: processes that never sync to a code host do not pay for them. */
function loadModules(): Promise<{ Octokit: typeof Octokit; sodium: typeof Sodium }> {
  modules ??= Promise.all([import('@octokit/rest'), import('libsodium-wrappers')]).then(async ([rest, sodiumModule]) => {
    const sodium = (sodiumModule as unknown as { default?: typeof Sodium }).default ?? sodiumModule;
    await sodium.ready;
    return { Octokit: rest.Octokit, sodium };
  });
  return modules;
}

interface RequestFault {
  status?: number;
  message?: string;
}

/**
 * codehost destinations: a repository's Actions secrets. Values are encrypted to the repository's
 * public key (a libsodium sealed box), as the API requires; the code host has no tags, so the
 * names (template prefix) are what marks them. `endpoint` is the API base (an enterprise server's
 * `https://HOST/api/v3`, or an emulator).
 */
export async function codehostActionsSecrets(details: Record<string, unknown>, endpoint: string | undefined): Promise<SecretStore> {
  const { Octokit: OctokitClass, sodium } = await loadModules();
  const token = String(details.access_token ?? '');
  const owner = String(details.repository_owner ?? '');
  const repo = String(details.repository_name ?? '');
  const client = new OctokitClass({ auth: token, baseUrl: endpoint || DEFAULT_API, request: { retries: 0 } });
  const failure = (err: unknown) => {
    const fault = (err ?? {}) as RequestFault;
    return providerFailure(fault.status, withoutSecrets(fault.message ?? 'request failed', [token]));
  };
  return {
    async upsert(name, value, signal) {
      try {
        const { data: key } = await client.rest.actions.getRepoPublicKey({ owner, repo, request: { signal } });
        const sealed = sodium.crypto_box_seal(sodium.from_string(value), sodium.from_base64(key.key, sodium.base64_variants.ORIGINAL));
        await client.rest.actions.createOrUpdateRepoSecret({
          owner,
          repo,
          secret_name: name,
          encrypted_value: sodium.to_base64(sealed, sodium.base64_variants.ORIGINAL),
          key_id: key.key_id,
          request: { signal },
        });
      } catch (err) {
        throw failure(err);
      }
    },
    async remove(name, signal) {
      try {
        await client.rest.actions.deleteRepoSecret({ owner, repo, secret_name: name, request: { signal } });
      } catch (err) {
        if ((err as RequestFault).status !== 404) throw failure(err);
      }
    },
    close: () => undefined,
  };
}
