export type { AclOperation, ParameterConstraints, PathPermissions, PathRule, Policy, PolicyCapability } from './types';
export { parsePolicy, normalizePolicyName, ROOT_POLICY } from './policy';
export { Acl, type Authorization } from './acl';
export { wrappingTtlViolation } from './wrapping';
export { DEFAULT_POLICY, DEFAULT_POLICY_TEXT } from './default-policy';
