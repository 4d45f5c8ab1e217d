import { apiError } from './errors';
import type {
  ClientCalls,
  EnableMountInput,
  GenerateRootStatus,
  HealthStatus,
  InitRequest,
  InitResponse,
  MountInfo,
  QueryValue,
  RekeyBackup,
  RekeyInitRequest,
  RekeyStatus,
  RekeyTarget,
  GeneratedToken,
  RekeyVerificationStatus,
  SealStatus,
  UnsealRequest,
} from './types';

/** Typed helpers for the `sys/` endpoints the CLI and operators use most. */
export class SysClient {
  constructor(private readonly client: ClientCalls) {}

  async sealStatus(): Promise<SealStatus> {
    return this.body<SealStatus>('GET', 'sys/seal-status');
  }

  async init(request: InitRequest): Promise<InitResponse> {
    return this.body<InitResponse>('PUT', 'sys/init', request);
  }

  /** Submits one unseal key share (with `migrate` during a seal migration), or `{ reset: true }` to discard the shares given so far. */
  async unseal(request: UnsealRequest): Promise<SealStatus> {
    return this.body<SealStatus>('PUT', 'sys/unseal', typeof request === 'string' ? { key: request } : request);
  }

  async seal(): Promise<void> {
    await this.client.request('PUT', 'sys/seal');
  }

  /** Makes the gateway answering give up its active duties (the lease expiry) to a peer. */
  async stepDown(): Promise<void> {
    await this.client.request('PUT', 'sys/step-down');
  }

  rekeyStatus(target: RekeyTarget): Promise<RekeyStatus> {
    return this.body('GET', `${rekeyBase(target)}/init`);
  }

  rekeyInit(target: RekeyTarget, request: RekeyInitRequest): Promise<RekeyStatus> {
    return this.body('PUT', `${rekeyBase(target)}/init`, request);
  }

  async rekeyCancel(target: RekeyTarget): Promise<void> {
    await this.client.request('DELETE', `${rekeyBase(target)}/init`);
  }

  /** One current share; the threshold-th answers with `complete` and the new shares. */
  rekeyUpdate(target: RekeyTarget, key: string, nonce: string): Promise<RekeyStatus> {
    return this.body('PUT', `${rekeyBase(target)}/update`, { key, nonce });
  }

  rekeyVerificationStatus(target: RekeyTarget): Promise<RekeyVerificationStatus> {
    return this.body('GET', `${rekeyBase(target)}/verify`);
  }

  rekeyVerify(target: RekeyTarget, key: string, nonce: string): Promise<RekeyVerificationStatus> {
    return this.body('PUT', `${rekeyBase(target)}/verify`, { key, nonce });
  }

  /** Restarts verification with a new nonce; the current keys stay valid. */
  rekeyVerificationRestart(target: RekeyTarget): Promise<RekeyVerificationStatus> {
    return this.body('DELETE', `${rekeyBase(target)}/verify`);
  }

  async rekeyBackup(target: RekeyTarget): Promise<RekeyBackup> {
    return (await this.body<{ data: RekeyBackup }>('GET', rekeyBackupPath(target))).data;
  }

  async rekeyBackupDelete(target: RekeyTarget): Promise<void> {
    await this.client.request('DELETE', rekeyBackupPath(target));
  }

  generateRootStatus(token: GeneratedToken = 'root'): Promise<GenerateRootStatus> {
    return this.body('GET', `${generationPath(token)}/attempt`);
  }

  /** Starts an attempt; without a PGP key the answer's `otp` is needed to decode the token. */
  generateRootStart(pgpKey?: string, token: GeneratedToken = 'root'): Promise<GenerateRootStatus> {
    return this.body('PUT', `${generationPath(token)}/attempt`, pgpKey ? { pgp_key: pgpKey } : {});
  }

  async generateRootCancel(token: GeneratedToken = 'root'): Promise<void> {
    await this.client.request('DELETE', `${generationPath(token)}/attempt`);
  }

  generateRootUpdate(key: string, nonce: string, token: GeneratedToken = 'root'): Promise<GenerateRootStatus> {
    return this.body('PUT', `${generationPath(token)}/update`, { key, nonce });
  }

  /**
   * Health answers with a status that encodes the node's state (200, 429, 472, 473, 501, 503) and the
   * same body in every case, so a non-2xx status is not an error here.
   */
  async health(query?: Record<string, QueryValue | undefined>): Promise<HealthStatus & { status: number }> {
    const response = await this.client.send<HealthStatus>('GET', 'sys/health', { query });
    if (response.body === null || typeof response.body.initialized !== 'boolean') {
      if (response.status >= 400) throw apiError('GET', 'sys/health', response.status, response.body);
      throw new Error(`sys/health answered status ${response.status} without a health status`);
    }
    return { ...response.body, status: response.status };
  }

  /** Mount path (with trailing slash) -> mount. */
  async mounts(): Promise<Record<string, MountInfo>> {
    const body = await this.body<{ data?: Record<string, MountInfo> } & Record<string, unknown>>('GET', 'sys/mounts');
    return body.data ?? (body as Record<string, MountInfo>);
  }

  async enableMount(path: string, input: EnableMountInput): Promise<void> {
    await this.client.request('POST', `sys/mounts/${trimSlashes(path)}`, { body: input });
  }

  async disableMount(path: string): Promise<void> {
    await this.client.request('DELETE', `sys/mounts/${trimSlashes(path)}`);
  }

  private async body<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.client.request<T>(method, path, { body });
    if (response.body === null) throw new Error(`${path} answered status ${response.status} without a body`);
    return response.body;
  }
}

function rekeyBase(target: RekeyTarget): string {
  return target === 'recovery' ? 'sys/rekey-recovery-key' : 'sys/rekey';
}

function generationPath(token: GeneratedToken): string {
  return token === 'dr-operation' ? 'sys/replication/dr/secondary/generate-operation-token' : 'sys/generate-root';
}

function rekeyBackupPath(target: RekeyTarget): string {
  return target === 'recovery' ? 'sys/rekey/recovery-key-backup' : 'sys/rekey/backup';
}

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}
