import { Acl, DEFAULT_POLICY, DEFAULT_POLICY_TEXT, parsePolicy, ROOT_POLICY, type Policy } from '@svc/acl';
import { ServiceError } from '@svc/api-contract';
import { InvalidationEpoch, type StorageView } from '@svc/storage';

/** Where a namespace keeps its policies, under its storage prefix. */
export const POLICY_PREFIX = 'sys/policy/';

/** Storage key (inside a namespace's view) of a policy, for cache invalidation. */
export function policyKey(name: string): string {
  return POLICY_PREFIX + name;
}

/**
 * The ACL policies of one namespace. Parsed policies are cached (every request evaluates them);
 * a write anywhere in the cluster drops the cached copy on every replica (ReplicaSync).
 */
export class PolicyStore {
  private readonly cache = new Map<string, Policy | null>();
  /** Compiled ACLs by policy set: most requests come from a handful of policy combinations. */
  private readonly acls = new Map<string, Acl>();
  /** A policy or ACL read while one of them changed is used but not cached. */
  private readonly invalidations = new InvalidationEpoch();

  constructor(private readonly storage: StorageView) {}

  /** Creates the built-in `default` policy in a new namespace. */
  async ensureDefault(): Promise<void> {
    if (!(await this.storage.get(policyKey(DEFAULT_POLICY)))) await this.put(DEFAULT_POLICY, DEFAULT_POLICY_TEXT);
  }

  clear(): void {
    this.invalidations.advance();
    this.cache.clear();
    this.acls.clear();
  }

  forget(name: string): void {
    this.invalidations.advance();
    this.cache.delete(name);
    this.acls.clear();
  }

  async get(name: string): Promise<Policy | null> {
    if (this.cache.has(name)) return this.cache.get(name)!;
    const mark = this.invalidations.mark;
    const text = (await this.storage.get(policyKey(name)))?.toString('utf8');
    const policy = text === undefined ? null : parsePolicy(name, text);
    if (this.invalidations.unchangedSince(mark)) this.cache.set(name, policy);
    return policy;
  }

  async put(name: string, text: string): Promise<Policy> {
    if (name === ROOT_POLICY) throw ServiceError.badRequest('cannot update the root policy');
    const policy = parsePolicy(name, text);
    await this.storage.put(policyKey(policy.name), Buffer.from(text, 'utf8'));
    this.forget(policy.name);
    return policy;
  }

  async delete(name: string): Promise<void> {
    if (name === ROOT_POLICY || name === DEFAULT_POLICY) throw ServiceError.badRequest(`cannot delete the ${name} policy`);
    await this.storage.delete(policyKey(name));
    this.forget(name);
  }

  async list(): Promise<string[]> {
    const names = (await this.storage.list(POLICY_PREFIX)).filter((k) => !k.endsWith('/'));
    return [...names, ROOT_POLICY].sort();
  }

  /** The ACL of a set of policy names; unknown names contribute nothing, as in Vault. */
  async acl(names: string[]): Promise<Acl> {
    const known = this.cachedAcl(names);
    if (known) return known;
    const mark = this.invalidations.mark;
    const policies = await Promise.all(names.map((name) => this.get(name)));
    const acl = new Acl(policies.filter((p): p is Policy => p !== null));
    if (this.invalidations.unchangedSince(mark)) this.acls.set(aclKey(names), acl);
    return acl;
  }

  /** `acl` answered from memory (the request path's usual case); undefined when storage must say. */
  cachedAcl(names: string[]): Acl | undefined {
    if (names.includes(ROOT_POLICY)) return Acl.root();
    return this.acls.get(aclKey(names));
  }
}

function aclKey(names: string[]): string {
  return names.length === 1 ? names[0] : [...names].sort().join('\n');
}
