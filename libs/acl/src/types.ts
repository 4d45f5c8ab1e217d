import type { Capability } from '@svc/framework';

/** Capabilities a policy can grant (`root` belongs to the root policy alone). */
export type PolicyCapability = Exclude<Capability, 'root'>;

/** Operations an ACL check is made for; each needs the capability of the same name. */
export type AclOperation = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list';

/** Parameter name (lower-cased) -> values; an empty list means "any value". */
export type ParameterConstraints = ReadonlyMap<string, readonly unknown[]>;

/** What one path rule grants, after merging every rule written for the same pattern. */
export interface PathPermissions {
  /** `deny` appears alone: it erases every other capability. */
  capabilities: ReadonlySet<PolicyCapability>;
  /** Empty: no restriction on parameter names. */
  allowedParameters: ParameterConstraints;
  deniedParameters: ParameterConstraints;
  /** Lower-cased names a create/update/patch request must carry. */
  requiredParameters: readonly string[];
  /** Seconds; 0 when the rule sets no bound. */
  minWrappingTtl: number;
  maxWrappingTtl: number;
}

/** One `path "<pattern>" { ... }` block. */
export interface PathRule extends PathPermissions {
  /** As written, minus a leading '/': exact, `prefix*`, or with `+` segments. */
  pattern: string;
}

/** A parsed ACL policy: its lower-cased name, the text as submitted, and its rules in file order. */
export interface Policy {
  name: string;
  text: string;
  rules: readonly PathRule[];
}
