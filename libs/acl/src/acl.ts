import type { Capability } from '@svc/framework';
import { parameterViolation } from './parameters';
import { RuleIndex } from './rule-index';
import type { AclOperation, PathRule, Policy } from './types';

/** The outcome of `Acl.authorize`. `reason` names a parameter when one is at fault, never a value. */
export interface Authorization {
  allowed: boolean;
  capabilities: ReadonlySet<Capability>;
  reason?: string;
  /** The rule that governed the decision (absent for the root policy and when nothing matched). */
  rule?: PathRule;
}

const NO_CAPABILITIES: ReadonlySet<Capability> = new Set();
const ROOT_CAPABILITIES: ReadonlySet<Capability> = new Set(['root']);
/** Operations that carry request parameters a policy can constrain. */
const WRITES = new Set<AclOperation>(['create', 'update', 'patch']);

/**
 * What a token may do, from its policies (pass the `default` policy explicitly when the token has
 * it). Rules for the same pattern merge; for a path, only the governing rule applies (see RuleIndex).
 */
export class Acl {
  private static readonly rootAcl = Acl.grantingEverything();
  private readonly index: RuleIndex;
  /** Set only on the root ACL. */
  private grantsEverything = false;

  constructor(policies: readonly Policy[]) {
    this.index = new RuleIndex(policies);
  }

  /** The ACL of the root policy: every path, every operation, `{root}` as capabilities. */
  static root(): Acl {
    return Acl.rootAcl;
  }

  private static grantingEverything(): Acl {
    const acl = new Acl([]);
    acl.grantsEverything = true;
    return acl;
  }

  get isRoot(): boolean {
    return this.grantsEverything;
  }

  /**
   * The capabilities on `path`: empty when no rule matches, `{deny}` alone when denied. Like Vault,
   * an exact rule also covers the same path with a trailing '/' (as a list request would use it).
   * The returned set is shared; do not modify it.
   */
  capabilities(path: string): ReadonlySet<Capability> {
    if (this.grantsEverything) return ROOT_CAPABILITIES;
    return this.index.lookup(path, true)?.capabilities ?? NO_CAPABILITIES;
  }

  /** Whether the token may see the mount at `mountPath` at all: some capability on a path in it. */
  hasMountAccess(mountPath: string): boolean {
    return this.grantsEverything || this.index.grantsUnder(mountPath);
  }

  /** The rule governing `path` for `operation` (its wrapping TTL bounds included), if any. */
  rule(path: string, operation: AclOperation): PathRule | undefined {
    return this.grantsEverything ? undefined : this.index.lookup(path, operation === 'list');
  }

  /**
   * Whether `operation` on `path` with request `data` is allowed: the governing rule must grant the
   * capability of the same name and, for create/update/patch, `data` must meet its parameter rules.
   */
  authorize(path: string, operation: AclOperation, data: Readonly<Record<string, unknown>> = {}): Authorization {
    if (this.grantsEverything) return { allowed: true, capabilities: ROOT_CAPABILITIES };
    const rule = this.rule(path, operation);
    if (!rule) return { allowed: false, capabilities: NO_CAPABILITIES, reason: 'no policy grants access to this path' };
    const denied = (reason: string): Authorization => ({ allowed: false, capabilities: rule.capabilities, reason, rule });
    if (rule.capabilities.has('deny')) return denied(`denied by the policy rule for path "${rule.pattern}"`);
    if (!rule.capabilities.has(operation)) {
      return denied(`the policy rule for path "${rule.pattern}" does not grant the "${operation}" capability`);
    }
    const violation = WRITES.has(operation) ? parameterViolation(rule, data) : undefined;
    if (violation) return denied(violation);
    return { allowed: true, capabilities: rule.capabilities, rule };
  }
}
