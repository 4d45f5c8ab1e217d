export {
  parsePasswordPolicy,
  generatePassword,
  passwordProblem,
  PasswordPolicyError,
  DEFAULT_PASSWORD_POLICY,
  DEFAULT_PASSWORD_POLICY_HCL,
  type PasswordPolicy,
  type CharsetRule,
} from './password-policy';
