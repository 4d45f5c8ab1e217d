import type { SvcClient } from './client';
import { apiError } from './errors';
import type {
  EnableMountInput,
  HealthStatus,
  InitRequest,
  InitResponse,
  MountInfo,
  QueryValue,
  SealStatus,
  UnsealRequest,
} from './types';

/** Typed helpers for the `sys/` endpoints the CLI and operators use most. */
export class SysClient {
  constructor(private readonly client: SvcClient) {}

  async sealStatus(): Promise<SealStatus> {
    return this.body<SealStatus>('GET', 'sys/seal-status');
  }

  async init(request: InitRequest): Promise<InitResponse> {
    return this.body<InitResponse>('PUT', 'sys/init', request);
  }

  /** Submits one unseal key share, or `{ reset: true }` to discard the shares given so far. */
  async unseal(request: UnsealRequest): Promise<SealStatus> {
    return this.body<SealStatus>('PUT', 'sys/unseal', typeof request === 'string' ? { key: request } : request);
  }

  async seal(): Promise<void> {
    await this.client.request('PUT', 'sys/seal');
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

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}
