import { randomInt, randomUUID } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { encodeOtpToken, type GenerateRootStatus } from '@svc/sdk';
import type { TransactionalStore } from '@svc/storage';
import { encryptForPgpKey, fingerprint } from './pgp';
import type { ShareAuthority } from './rekey';
import { shareLength } from './shamir';
import { StoredOperation, addShare, requireNonce } from './stored-operation';

/** Vault's root generation status (`sys/generate-root/attempt`, `/update`). */
export type { GenerateRootStatus };

interface GenerateRootState {
  nonce: string;
  /** The one-time pad the token is XORed with (absent with a PGP key). */
  otp?: string;
  pgpKey?: string;
  pgpFingerprint?: string;
  /** Shares given so far (hex). */
  progress: string[];
}

const OTP_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Root token generation: a threshold of unseal (or recovery) shares creates a root token, handed
 * out XORed with a one-time pad the server made at the start, or encrypted to a PGP key. Progress
 * lives in the barrier, shared by the gateway replicas.
 */
export class GenerateRoot {
  private readonly operation: StoredOperation<GenerateRootState>;

  /**
   * `tokenLength`: the length of every token `createRootToken` makes (the pad's length); `what`
   * names the operation in refusals (the DR operation token generation is the same machine).
   */
  constructor(
    store: TransactionalStore,
    key: string,
    private readonly authority: () => ShareAuthority,
    private readonly createRootToken: () => Promise<string>,
    private readonly tokenLength: number,
    private readonly what = 'root generation',
  ) {
    this.operation = new StoredOperation(store, key);
  }

  async status(): Promise<GenerateRootStatus> {
    const [state, split] = await Promise.all([this.operation.read(), this.authority().split()]);
    return this.statusOf(state, split.threshold);
  }

  async start(pgpKey: string | undefined): Promise<GenerateRootStatus> {
    const split = await this.authority().split();
    const state: GenerateRootState = pgpKey
      ? { nonce: randomUUID(), pgpKey, pgpFingerprint: await fingerprint(pgpKey), progress: [] }
      : { nonce: randomUUID(), otp: randomOtp(this.tokenLength), progress: [] };
    return this.operation.step<GenerateRootStatus>((existing) =>
      existing
        ? { next: existing, error: ServiceError.badRequest(`a ${this.what} is already in progress; cancel it to start another`) }
        : { next: state, result: { ...this.statusOf(state, split.threshold), otp: state.otp ?? '' } },
    );
  }

  async cancel(): Promise<void> {
    await this.operation.step(() => ({ next: null, result: undefined }));
  }

  /** One share; the threshold-th, when the shares are right, creates the root token. */
  async update(key: string, nonce: string): Promise<GenerateRootStatus> {
    const authority = this.authority();
    const split = await authority.split();
    const taken = await this.operation.step<{ state: GenerateRootState; shares?: Buffer[] }>((state) => {
      if (!state) return { next: null, error: ServiceError.badRequest(`no ${this.what} is in progress`) };
      requireNonce(nonce, state.nonce, this.what);
      const shares = addShare(state.progress, key, shareLength(split.shares));
      if (shares.length < split.threshold) {
        const next = { ...state, progress: shares.map((share) => share.toString('hex')) };
        return { next, result: { state: next } };
      }
      // Taken out of storage at once: a wrong set leaves the attempt at progress 0.
      return { next: { ...state, progress: [] }, result: { state, shares } };
    });
    const { state, shares } = taken;
    if (!shares) return this.statusOf(state, split.threshold);
    try {
      await authority.verify(shares);
    } finally {
      shares.forEach((share) => share.fill(0));
    }
    await this.operation.step((now) =>
      now?.nonce === state.nonce
        ? { next: null, result: undefined }
        : { next: now, error: ServiceError.badRequest(`the ${this.what} was cancelled while its last share was being checked`) },
    );
    const encoded = await this.encode(state, await this.createRootToken());
    return { ...this.statusOf(state, split.threshold), progress: shares.length, encoded_token: encoded, encoded_root_token: encoded, complete: true };
  }

  private async encode(state: GenerateRootState, token: string): Promise<string> {
    if (state.pgpKey) return Buffer.from(await encryptForPgpKey(state.pgpKey, Buffer.from(token, 'utf8'))).toString('base64');
    return encodeOtpToken(token, state.otp ?? '');
  }

  private statusOf(state: GenerateRootState | null, required: number): GenerateRootStatus {
    return {
      started: state !== null,
      nonce: state?.nonce ?? '',
      progress: state?.progress.length ?? 0,
      required,
      encoded_token: '',
      encoded_root_token: '',
      pgp_fingerprint: state?.pgpFingerprint ?? '',
      otp: '',
      otp_length: this.tokenLength,
      complete: false,
    };
  }
}

function randomOtp(length: number): string {
  return Array.from({ length }, () => OTP_ALPHABET[randomInt(OTP_ALPHABET.length)]).join('');
}
