import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '@svc/api-contract';
import { verifierAuthority, type ShareAuthority, type ShareVerifier } from '@svc/seal';
import type { ReplicationHost } from './host';
import { DR_TOKEN_PREFIX_KEY, SHARE_VERIFIER, type ModeStates } from './mode-state';

/** DR operation tokens: a prefix and 24 random bytes, as long as a service token (the OTP's length). */
const DR_TOKEN_PREFIX = 'svd.';

/**
 * The operation tokens of a DR secondary, which authorize what it may do without serving clients
 * (promotion, a change of primary), and the primary's shares that authorize generating them.
 */
export class DrOperationTokens {
  constructor(
    private readonly host: Pick<ReplicationHost, 'store'>,
    private readonly states: ModeStates,
  ) {}

  /** A new DR operation token (no TTL), stored only as its hash. */
  async createOperationToken(): Promise<string> {
    const token = DR_TOKEN_PREFIX + randomBytes(24).toString('base64url');
    await this.host.store.put(DR_TOKEN_PREFIX_KEY + tokenHash(token), Buffer.from(new Date().toISOString()));
    return token;
  }

  /** Refuses (403) a missing or unknown DR operation token. */
  async requireOperationToken(token: string): Promise<void> {
    if (!token) throw ServiceError.badRequest('dr_operation_token is required in DR mode');
    const hash = tokenHash(token);
    const stored = await this.host.store.list(DR_TOKEN_PREFIX_KEY);
    const found = stored.some((key) => key.length === hash.length && timingSafeEqual(Buffer.from(key), Buffer.from(hash)));
    if (!found) throw ServiceError.forbidden();
  }

  async deleteOperationToken(token: string): Promise<void> {
    await this.requireOperationToken(token);
    await this.host.store.delete(DR_TOKEN_PREFIX_KEY + tokenHash(token));
  }

  /**
   * What authorizes DR operation tokens: the primary's unseal (or recovery) shares, checked with
   * the verifier it handed over (a demoted primary: its own, which were its set's primary's).
   */
  drShareAuthority(): ShareAuthority {
    return verifierAuthority(async () => {
      const stored = await this.host.store.getJSON<ShareVerifier>(SHARE_VERIFIER);
      if (!stored) throw ServiceError.badRequest('this DR secondary has not received its primary\'s share verifier yet: it comes at activation and with heartbeats');
      return stored;
    }, "the primary's");
  }

  /** Generation of DR operation tokens is a DR secondary's. */
  async requireDrSecondary(): Promise<void> {
    await this.states.requireSecondary('dr');
  }
}

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
