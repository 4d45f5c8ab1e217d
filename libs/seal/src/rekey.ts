import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import type { RekeyBackup as BackupRecord, RekeyInitRequest as RekeyStart, RekeyStatus as WireRekeyStatus } from '@svc/sdk';
import type { TransactionalStore } from '@svc/storage';
import type { KeySplit } from './key-split';
import { UNSEAL_KEY_BYTES, combineShares, shareLength, splitKey, validateShareConfig } from './shamir';
import { handOutShares, pgpFingerprints, type HandedOutShares } from './shares';
import { StoredOperation, addShare, requireNonce } from './stored-operation';

export type { KeySplit };

/** Keys split into shares whose threshold authorizes an operation (generate-root). */
export interface ShareAuthority {
  split(): Promise<KeySplit>;
  /** Resolves when the shares rebuild the current key; a 400 otherwise. */
  verify(shares: Buffer[]): Promise<void>;
}

/** Keys that a rekey replaces: prepared when the old shares are in, installed once verified. */
export interface RekeyTarget extends ShareAuthority {
  /** Checks the old shares (400 when wrong) and returns what `install` will store, as text. */
  prepare(shares: Buffer[], newKey: Buffer, split: KeySplit, pgpFingerprints: string[] | undefined): Promise<string>;
  install(prepared: string): Promise<void>;
  /**
   * Set when the seal keeps the new key itself (an auto-unseal seal's root key, rotated through its
   * provider): no shares of it exist, so none are handed out, encrypted, backed up or verified.
   */
  readonly storesNewKey?: boolean;
}

export type { BackupRecord, RekeyStart };

/** The rekey operation object (Document 1, "Rekey operation"); the completion adds the new shares. */
export type RekeyStatus = Omit<WireRekeyStatus, 'complete' | 'keys' | 'keys_base64'>;

export interface RekeyCompletion extends RekeyStatus, HandedOutShares {
  complete: true;
}

export interface VerificationStatus {
  started: boolean;
  nonce: string;
  t: number;
  n: number;
  progress: number;
}

interface RekeyState {
  nonce: string;
  split: KeySplit;
  pgpKeys?: string[];
  pgpFingerprints?: string[];
  backup: boolean;
  requireVerification: boolean;
  /** Old shares given so far (hex). */
  progress: string[];
  /** Set once the old shares were in and verification was required. */
  pending?: PendingKey;
}

interface PendingKey {
  nonce: string;
  /** The new key (hex), which the new shares must rebuild. */
  key: string;
  prepared: string;
  /** New shares given so far (hex). */
  progress: string[];
  handedOut: HandedOutShares;
}

const NO_REKEY = 'no rekey is in progress';

/**
 * A rekey (Document 1, "Recovery-key rekey"; the same machine serves the unseal keys): the
 * threshold of current shares authorizes a new key split into new shares; with verification, the
 * key changes only once a threshold of the new shares came back. State and shares live in the
 * barrier, shared by the gateway replicas; the backup of PGP-encrypted shares too.
 */
export class Rekey {
  private readonly operation: StoredOperation<RekeyState>;

  constructor(
    private readonly store: TransactionalStore,
    progressKey: string,
    private readonly backupKey: string,
    private readonly target: RekeyTarget,
  ) {
    this.operation = new StoredOperation(store, progressKey);
  }

  async status(): Promise<RekeyStatus> {
    const [state, current] = await Promise.all([this.operation.read(), this.target.split()]);
    return statusOf(state, current.threshold);
  }

  async start(request: RekeyStart): Promise<RekeyStatus> {
    const split = this.target.storesNewKey ? storedKeySplit(request) : { shares: request.secret_shares ?? 0, threshold: request.secret_threshold ?? 0 };
    validateShareConfig(split.shares, split.threshold);
    const pgpKeys = request.pgp_keys?.length ? request.pgp_keys : undefined;
    if (request.backup && !pgpKeys) throw ServiceError.badRequest('backup requires pgp_keys: only PGP-encrypted shares are backed up');
    const fingerprints = await pgpFingerprints(pgpKeys, split.shares);
    const current = await this.target.split();
    const state: RekeyState = {
      nonce: randomUUID(),
      split,
      ...(pgpKeys && { pgpKeys, pgpFingerprints: fingerprints }),
      backup: request.backup ?? false,
      requireVerification: request.require_verification ?? false,
      progress: [],
    };
    return this.operation.step<RekeyStatus>((existing) =>
      existing
        ? { next: existing, error: ServiceError.badRequest('a rekey is already in progress; cancel it to start another') }
        : { next: state, result: statusOf(state, current.threshold) },
    );
  }

  async cancel(): Promise<void> {
    await this.operation.step(() => ({ next: null, result: undefined }));
  }

  /** One current share. The threshold-th prepares the new key: installed now, or after verification. */
  async update(key: string, nonce: string): Promise<RekeyStatus | RekeyCompletion> {
    const current = await this.target.split();
    const taken = await this.operation.step<{ state: RekeyState; shares?: Buffer[] }>((state) => {
      if (!state) return { next: null, error: ServiceError.badRequest(NO_REKEY) };
      if (state.pending) {
        return { next: state, error: ServiceError.badRequest(`the new keys were handed out and await verification: submit them to the verify endpoint (verification nonce ${state.pending.nonce})`) };
      }
      requireNonce(nonce, state.nonce, 'rekey');
      const shares = addShare(state.progress, key, shareLength(current.shares));
      if (shares.length < current.threshold) {
        const next = { ...state, progress: shares.map((share) => share.toString('hex')) };
        return { next, result: { state: next } };
      }
      // Taken out of storage at once, so a share sent meanwhile to another replica starts afresh.
      return { next: { ...state, progress: [] }, result: { state, shares } };
    });
    if (!taken.shares) return statusOf(taken.state, current.threshold);

    const { state } = taken;
    const newKey = randomBytes(UNSEAL_KEY_BYTES);
    try {
      const prepared = await this.target.prepare(taken.shares, newKey, state.split, state.pgpFingerprints);
      const handedOut = this.target.storesNewKey ? { keys: [], keys_base64: [] } : await handOutShares(await splitKey(newKey, state.split.shares, state.split.threshold), state.pgpKeys);
      const finished = { ...statusOf({ ...state, progress: [] }, current.threshold), ...handedOut, complete: true as const };
      if (!state.requireVerification) {
        await this.operation.step((now) => (now?.nonce === state.nonce ? { next: null, result: undefined } : cancelledMeanwhile(now)));
        await this.finish(state, prepared, handedOut);
        return finished;
      }
      const pending: PendingKey = { nonce: randomUUID(), key: newKey.toString('hex'), prepared, progress: [], handedOut };
      await this.operation.step((now) => (now?.nonce === state.nonce ? { next: { ...now, pending }, result: undefined } : cancelledMeanwhile(now)));
      return { ...finished, verification_nonce: pending.nonce };
    } finally {
      newKey.fill(0);
      taken.shares.forEach((share) => share.fill(0));
    }
  }

  async verificationStatus(): Promise<VerificationStatus> {
    return verificationOf(await this.operation.read());
  }

  /** Starts verification over: progress 0 and a new nonce; the current keys stay valid. */
  async restartVerification(): Promise<VerificationStatus> {
    return this.operation.step<VerificationStatus>((state) => {
      if (!state?.pending) return { next: state, error: ServiceError.badRequest('no rekey verification is in progress') };
      const next = { ...state, pending: { ...state.pending, nonce: randomUUID(), progress: [] } };
      return { next, result: verificationOf(next) };
    });
  }

  /** One share of the new key; the threshold-th installs it when the shares rebuild it. */
  async verify(key: string, nonce: string): Promise<VerificationStatus | { nonce: string; complete: true }> {
    const taken = await this.operation.step<{ state: RekeyState; pending: PendingKey; shares?: Buffer[] }>((state) => {
      const pending = state?.pending;
      if (!state || !pending) return { next: state, error: ServiceError.badRequest('no rekey verification is in progress') };
      requireNonce(nonce, pending.nonce, 'rekey verification');
      const shares = addShare(pending.progress, key, shareLength(state.split.shares));
      if (shares.length < state.split.threshold) {
        const next = { ...state, pending: { ...pending, progress: shares.map((share) => share.toString('hex')) } };
        return { next, result: { state: next, pending } };
      }
      return { next: { ...state, pending: { ...pending, progress: [] } }, result: { state, pending, shares } };
    });
    const { state, pending, shares } = taken;
    if (!shares) return verificationOf(state);

    const rebuilt = await combineShares(shares).catch(() => undefined);
    const newKey = Buffer.from(pending.key, 'hex');
    const matches = rebuilt !== undefined && rebuilt.length === newKey.length && timingSafeEqual(rebuilt, newKey);
    for (const secret of [newKey, ...shares, ...(rebuilt ? [rebuilt] : [])]) secret.fill(0);
    if (!matches) throw ServiceError.badRequest('the submitted shares do not form the new key; verification progress has been reset');
    await this.operation.step((now) => (now?.pending?.nonce === pending.nonce ? { next: null, result: undefined } : cancelledMeanwhile(now)));
    await this.finish(state, pending.prepared, pending.handedOut);
    return { nonce: pending.nonce, complete: true };
  }

  async backup(): Promise<BackupRecord | null> {
    const raw = await this.store.get(this.backupKey);
    return raw && (JSON.parse(raw.toString('utf8')) as BackupRecord);
  }

  async deleteBackup(): Promise<void> {
    await this.store.delete(this.backupKey);
  }

  private async finish(state: RekeyState, prepared: string, handedOut: HandedOutShares): Promise<void> {
    await this.target.install(prepared);
    if (!state.backup || !state.pgpFingerprints) return;
    const keys: Record<string, string[]> = {};
    state.pgpFingerprints.forEach((fingerprint, i) => (keys[fingerprint] ??= []).push(handedOut.keys[i]));
    const record: BackupRecord = { nonce: state.nonce, keys };
    await this.store.put(this.backupKey, Buffer.from(JSON.stringify(record), 'utf8'));
  }
}

/**
 * The split of a key the seal stores (Vault: "secret shares, secret threshold and stored shares
 * must be 1"): one, whatever was asked, and no PGP keys, backup or verification, which need shares.
 */
function storedKeySplit(request: RekeyStart): KeySplit {
  const refusal = request.pgp_keys?.length ? 'PGP key encryption' : request.backup ? 'key backup' : request.require_verification ? 'requiring verification' : undefined;
  if (refusal) throw ServiceError.badRequest(`${refusal} not supported when rekeying the root key with recovery keys: the seal stores the new root key and no unseal key shares are created`);
  return { shares: 1, threshold: 1 };
}

function statusOf(state: RekeyState | null, required: number): RekeyStatus {
  return {
    started: state !== null,
    nonce: state?.nonce ?? '',
    t: state?.split.threshold ?? 0,
    n: state?.split.shares ?? 0,
    progress: state?.progress.length ?? 0,
    required,
    pgp_fingerprints: state?.pgpFingerprints ?? null,
    backup: state?.backup ?? false,
    verification_required: state?.requireVerification ?? false,
    ...(state?.pending && { verification_nonce: state.pending.nonce }),
  };
}

function verificationOf(state: RekeyState | null): VerificationStatus {
  return {
    started: state?.pending !== undefined,
    nonce: state?.pending?.nonce ?? '',
    t: state?.pending ? state.split.threshold : 0,
    n: state?.pending ? state.split.shares : 0,
    progress: state?.pending?.progress.length ?? 0,
  };
}

function cancelledMeanwhile(state: RekeyState | null): { next: RekeyState | null; error: ServiceError } {
  return { next: state, error: ServiceError.badRequest('the rekey was cancelled while its last share was being checked; the current keys stay valid') };
}
