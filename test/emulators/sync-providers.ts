import type { TestCa } from '@svc/testing';
import { startSecretsManagerEmulator, type SecretsManagerEmulator } from './aws/secrets-manager';
import { startAzureKeyVaultEmulator, type AzureKeyVaultEmulator } from './azure-keyvault';
import { startGcpSecretManagerEmulator, type GcpSecretManagerEmulator } from './gcp-secret-manager';
import { startGithubEmulator, type GithubEmulator } from './github';
import { startVercelEmulator, type VercelEmulator } from './vercel';

/** The credentials a suite's sync destinations use; they carry the suite's marker, so logs can be searched for them. */
export interface SyncAccounts {
  awsKey: { id: string; secret: string };
  githubToken: string;
  vercelToken: string;
  azureApp: { id: string; secret: string };
}

/** Accounts whose credentials all carry `marker`. */
export function syncAccounts(marker: string): SyncAccounts {
  return {
    awsKey: { id: 'AKIASYNCTEST0001', secret: `aws-${marker}` },
    githubToken: `ghp_${marker}`,
    vercelToken: `vercel-${marker}`,
    azureApp: { id: 'a1b2c3d4-0000-4000-8000-00000000sync', secret: `azure-${marker}` },
  };
}

export interface SyncProviders {
  aws: SecretsManagerEmulator;
  github: GithubEmulator;
  vercel: VercelEmulator;
  azure: AzureKeyVaultEmulator;
  gcp: GcpSecretManagerEmulator;
  close(): Promise<void>;
}

/**
 * The emulators of the five sync destination types, each with the accounts of `accounts`: the
 * repository acme/app (the token may write it), the project prj_web of team team_acme (the token
 * is the team's), an app registration in the vault's directory. Key Vault serves TLS with a
 * certificate of `ca`, which the server processes must trust.
 */
export async function startSyncProviders(ca: TestCa, accounts: SyncAccounts): Promise<SyncProviders> {
  const [aws, github, vercel, azure, gcp] = await Promise.all([
    startSecretsManagerEmulator(),
    startGithubEmulator(),
    startVercelEmulator(),
    startAzureKeyVaultEmulator(ca.issue('keyvault', ['127.0.0.1'])),
    startGcpSecretManagerEmulator(),
  ]);
  azure.apps.set(accounts.azureApp.id, accounts.azureApp.secret);
  aws.accessKeys.set(accounts.awsKey.id, { secretAccessKey: accounts.awsKey.secret });
  github.addRepository('acme', 'app');
  github.tokens.set(accounts.githubToken, new Set(['acme/app']));
  vercel.addProject('prj_web', 'team_acme');
  vercel.tokens.set(accounts.vercelToken, 'team_acme');
  return {
    aws,
    github,
    vercel,
    azure,
    gcp,
    close: async () => {
      await Promise.all([aws.close(), github.close(), vercel.close(), azure.close(), gcp.close()]);
    },
  };
}
