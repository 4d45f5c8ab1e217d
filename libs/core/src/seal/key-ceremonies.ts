import { ServiceError } from '@svc/api-contract';
import { GenerateRoot, Rekey, type Seal } from '@svc/seal';
import type { StorageView } from '@svc/storage';
import { SERVICE_TOKEN_LENGTH } from '../tokens/token-store';

/**
 * The operations that need a quorum of key holders: rekey of the unseal or recovery keys (or, on
 * an auto-unseal seal, of the root key) and root token generation. Their progress lives in the
 * barrier, so a share sent to any gateway replica counts.
 */
export class KeyCeremonies {
  readonly generateRoot: GenerateRoot;
  /** sys/rekey/* on a Shamir seal, sys/rekey-recovery-key/* on an auto-unseal seal. */
  private readonly keysRekey: Rekey;
  /** sys/rekey/* on an auto-unseal seal: recovery shares rotate the root key. */
  private readonly rootKeyRekey?: Rekey;

  constructor(private readonly seal: Seal, coreView: StorageView, createRootToken: () => Promise<string>) {
    const keys = seal.recoverySeal ? 'recovery-keys' : 'unseal-keys';
    this.keysRekey = new Rekey(coreView, `rekey/${keys}`, `${keys}-backup`, seal.authorityKeys);
    if (seal.rootKeyRotation) this.rootKeyRekey = new Rekey(coreView, 'rekey/root-key', 'unseal-keys-backup', seal.rootKeyRotation);
    this.generateRoot = new GenerateRoot(coreView, 'generate-root', () => seal.authorityKeys, createRootToken, SERVICE_TOKEN_LENGTH);
  }

  /** sys/rekey/*: the unseal keys of the Shamir seal; with an auto-unseal seal, as in Vault, the root key (recovery shares authorize). */
  unsealRekey(): Rekey {
    return this.rootKeyRekey ?? this.keysRekey;
  }

  /** sys/rekey-recovery-key/*: only a seal with recovery keys has them to rekey. */
  recoveryRekey(): Rekey {
    if (!this.seal.recoverySeal) throw ServiceError.badRequest('the shamir seal has no recovery keys: recovery-key rekey needs an auto-unseal seal; use sys/rekey for the unseal keys');
    return this.keysRekey;
  }
}
