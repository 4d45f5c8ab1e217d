import { ServiceError, type Envelope, type OutgoingEnvelope, type WrapInfo } from '@svc/api-contract';
import { createView, type Barrier, type StorageView } from '@svc/storage';
import { mountStoragePrefix } from '@svc/engine-host';
import type { Namespace } from '../namespaces/namespace';
import type { NamespaceRegistry } from '../namespaces/registry';
import type { TokenManager } from '../tokens/token-manager';
import type { TokenEntry } from '../tokens/token-store';

const RESPONSE_KEY = 'response';
const INFO_KEY = 'wrapinfo';
const INVALID = 'wrapping token is not valid or does not exist';

interface StoredWrapInfo {
  creation_path: string;
  creation_time: string;
  creation_ttl: number;
}

/**
 * Response wrapping: the response goes into the cubbyhole of a new single-use token, which is
 * all the caller receives. Unwrapping returns the response once and revokes the token.
 */
export class ResponseWrapper {
  constructor(
    private readonly tokens: TokenManager,
    private readonly namespaces: NamespaceRegistry,
    private readonly barrier: Barrier,
    /** The system's maximum lease TTL, seconds: no wrapping token outlives it. */
    private readonly maxTtl: number,
  ) {}

  async wrap(response: OutgoingEnvelope, requestedTtl: number, namespace: Namespace, creationPath: string): Promise<WrapInfo> {
    const ttl = Math.min(requestedTtl, this.maxTtl);
    const { id, entry } = await this.tokens.create({
      parent: null,
      policies: ['response-wrapping'],
      meta: null,
      displayName: 'response-wrapping',
      numUses: 0,
      ttl,
      explicitMaxTtl: ttl,
      period: 0,
      renewable: false,
      type: 'service',
      namespace: namespace.path,
      namespaceId: namespace.record.id,
      role: '',
      path: creationPath,
      wrapping: true,
    });
    const info: StoredWrapInfo = { creation_path: creationPath, creation_time: new Date(entry.creationTime * 1000).toISOString(), creation_ttl: ttl };
    const cubbyhole = this.cubbyholeOf(namespace, entry.accessor);
    await cubbyhole.putJSON(RESPONSE_KEY, response);
    await cubbyhole.putJSON(INFO_KEY, info);
    return {
      token: id,
      accessor: entry.accessor,
      ttl,
      creation_time: info.creation_time,
      creation_path: creationPath,
      ...(response.auth?.accessor ? { wrapped_accessor: response.auth.accessor } : {}),
    };
  }

  /** The wrapped response, once: the token is revoked as it is read. */
  async unwrap(token: string): Promise<Envelope> {
    const { entry, cubbyhole } = await this.open(token);
    const response = await cubbyhole.getJSON<Envelope>(RESPONSE_KEY);
    await this.tokens.revokeTree(entry.accessor);
    if (!response) throw ServiceError.badRequest(INVALID);
    return response;
  }

  async lookup(token: string): Promise<StoredWrapInfo> {
    const { cubbyhole } = await this.open(token);
    const info = await cubbyhole.getJSON<StoredWrapInfo>(INFO_KEY);
    if (!info) throw ServiceError.badRequest(INVALID);
    return info;
  }

  /** A new wrapping token for the same response; the old one stops working. */
  async rewrap(token: string): Promise<WrapInfo> {
    const { entry } = await this.open(token);
    const info = await this.lookup(token);
    const namespace = this.namespaces.get(entry.namespace)!;
    const response = await this.unwrap(token);
    return this.wrap(response, info.creation_ttl, namespace, info.creation_path);
  }

  private async open(token: string): Promise<{ entry: TokenEntry; cubbyhole: StorageView }> {
    const entry = await this.tokens.store.lookup(token);
    const namespace = entry && this.namespaces.get(entry.namespace);
    if (!entry || !entry.wrapping || !namespace) throw ServiceError.badRequest(INVALID);
    return { entry, cubbyhole: this.cubbyholeOf(namespace, entry.accessor) };
  }

  private cubbyholeOf(namespace: Namespace, accessor: string): StorageView {
    const mount = namespace.secretMounts.get('cubbyhole/');
    if (!mount) throw ServiceError.unavailable('cubbyhole is not mounted');
    return createView(this.barrier, mountStoragePrefix(mount)).sub(`${accessor}/`);
  }
}
