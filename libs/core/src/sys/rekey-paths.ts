import type { FieldMap, PathDeclaration } from '@svc/framework';
import type { Rekey } from '@svc/seal';
import type { KeyCeremonies } from '../seal/key-ceremonies';

/** What the rekey paths use of the core: the two rekeys (every operation of each is served). */
export interface RekeyPathsDeps {
  ceremonies: Pick<KeyCeremonies, 'unsealRekey' | 'recoveryRekey'>;
}

const SHARE_FIELDS: FieldMap = {
  key: { type: 'string', required: true, sensitive: true, description: 'One share (hex or base64).' },
  nonce: { type: 'string', required: true, description: 'Nonce of the operation, from its status.' },
};

/**
 * sys/rekey/* (the unseal keys of the Shamir seal) and sys/rekey-recovery-key/* (the recovery
 * keys of an auto-unseal seal): one state machine, Document 1's "Recovery-key rekey". Unauthenticated
 * as in Vault (the shares are the authorization); the backups need a token with sudo.
 */
export function rekeyPaths(core: RekeyPathsDeps): PathDeclaration[] {
  return [
    ...rekeyDeclarations('rekey', ['rekey/backup'], 'unseal', () => core.ceremonies.unsealRekey()),
    ...rekeyDeclarations('rekey-recovery-key', ['rekey/recovery-key-backup', 'rekey-recovery-key/backup'], 'recovery', () => core.ceremonies.recoveryRekey()),
  ];
}

function rekeyDeclarations(prefix: string, [backup, ...backupAliases]: string[], keys: string, rekey: () => Rekey): PathDeclaration[] {
  return [
    {
      pattern: `${prefix}/init`,
      synopsis: `Starts, reads or cancels a rekey of the ${keys} keys.`,
      description: `One rekey at a time; a new one gets a new nonce. With \`pgp_keys\` the new shares are returned encrypted, one key per share; with \`backup\` they are also kept for \`sys/${backup}\`. With \`require_verification\` the ${keys} key changes only once a threshold of the new shares was submitted to \`sys/${prefix}/verify\`.`,
      fields: {
        // Not required by the route: sys/rekey on an auto-unseal seal rotates the root key and takes none (Vault forces them to 1).
        secret_shares: { type: 'int', description: 'Number of new shares (required, except for sys/rekey on an auto-unseal seal, where it is 1).' },
        secret_threshold: { type: 'int', description: 'Shares needed to rebuild the new key; at most secret_shares (1 for sys/rekey on an auto-unseal seal).' },
        pgp_keys: { type: 'comma-string-list', description: 'Base64 PGP public keys, one per new share, to encrypt the new shares with.' },
        backup: { type: 'bool', default: false, description: 'With pgp_keys: also store the encrypted shares for retrieval through the backup endpoint.' },
        require_verification: { type: 'bool', default: false, description: 'Rotate only after a threshold of the new shares was submitted to the verify endpoint.' },
      },
      operations: {
        read: { summary: 'Read the rekey progress.', unauthenticated: true, handler: async () => ({ raw: await rekey().status() }) },
        update: {
          summary: 'Start a rekey.',
          unauthenticated: true,
          handler: async (_req, f) => ({
            raw: await rekey().start({
              secret_shares: f.get('secret_shares'),
              secret_threshold: f.get('secret_threshold'),
              pgp_keys: f.get<string[] | undefined>('pgp_keys'),
              backup: f.get('backup'),
              require_verification: f.get('require_verification'),
            }),
          }),
        },
        delete: {
          summary: 'Cancel the rekey; the current keys stay valid.',
          unauthenticated: true,
          handler: async () => {
            await rekey().cancel();
            return undefined;
          },
        },
      },
    },
    {
      pattern: `${prefix}/update`,
      synopsis: `Submits one current ${keys} key share to the rekey in progress.`,
      description: 'The threshold-th share completes the rekey: the new shares are returned (and the key rotated unless verification is required). A wrong set of shares resets the progress.',
      fields: SHARE_FIELDS,
      operations: {
        update: {
          summary: 'Submit a share.',
          unauthenticated: true,
          handler: async (_req, f) => ({ raw: await rekey().update(f.get('key'), f.get('nonce')) }),
        },
      },
    },
    {
      pattern: `${prefix}/verify`,
      synopsis: 'Verification of the new shares before the rekey takes effect.',
      description: 'Deleting restarts the verification with a new nonce and progress 0; the current keys stay valid until a threshold of the new shares is verified.',
      fields: SHARE_FIELDS,
      operations: {
        read: { summary: 'Read the verification progress.', unauthenticated: true, handler: async () => ({ raw: await rekey().verificationStatus() }) },
        update: {
          summary: 'Submit a share of the new key.',
          unauthenticated: true,
          handler: async (_req, f) => ({ raw: await rekey().verify(f.get('key'), f.get('nonce')) }),
        },
        delete: {
          summary: 'Restart the verification.',
          unauthenticated: true,
          handler: async () => ({ raw: await rekey().restartVerification() }),
        },
      },
    },
    {
      pattern: backup,
      aliases: backupAliases,
      synopsis: `The PGP-encrypted ${keys} key shares kept by the last rekey with \`backup\`.`,
      operations: {
        read: {
          summary: 'Read the backup.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            const record = await rekey().backup();
            return record ? { data: { ...record } } : undefined;
          },
        },
        delete: {
          summary: 'Delete the backup.',
          sudo: true,
          rootNamespace: true,
          handler: async () => {
            await rekey().deleteBackup();
            return undefined;
          },
        },
      },
    },
  ];
}
