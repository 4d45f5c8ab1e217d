/**
 * Password policies as Vault writes them (HCL): a `length` and `rule "charset"` blocks, each with
 * the characters it allows and `min-chars`, the fewest of them a password must contain. The
 * characters of a password are drawn from the union of every rule's charset.
 */
import { randomInt } from 'node:crypto';
import { parseHcl } from '@svc/config';

export interface CharsetRule {
  /** Distinct characters, in the order first written. */
  charset: string;
  minChars: number;
}

export interface PasswordPolicy {
  length: number;
  rules: CharsetRule[];
}

/** A policy that cannot be parsed or can never be satisfied; the message names the problem. */
export class PasswordPolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PasswordPolicyError';
  }
}

const MIN_LENGTH = 4;
const MAX_LENGTH = 4096;

export const DEFAULT_PASSWORD_POLICY_HCL = `length = 20

rule "charset" {
  charset   = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}

rule "charset" {
  charset   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
  min-chars = 1
}

rule "charset" {
  charset   = "0123456789"
  min-chars = 1
}

rule "charset" {
  charset   = "-"
  min-chars = 1
}
`;

/** Parses and checks a policy: a positive length, at least one charset, minimums that fit the length. */
export function parsePasswordPolicy(text: string): PasswordPolicy {
  let parsed: unknown;
  try {
    parsed = parseHcl(text, 'password policy');
  } catch (err) {
    throw new PasswordPolicyError((err as Error).message);
  }
  if (!isRecord(parsed)) throw new PasswordPolicyError('password policy: expected `length` and `rule "charset"` blocks');
  const length = parsed.length;
  if (typeof length !== 'number' || !Number.isInteger(length) || length < MIN_LENGTH || length > MAX_LENGTH) {
    throw new PasswordPolicyError(`password policy: "length" must be an integer from ${MIN_LENGTH} to ${MAX_LENGTH}`);
  }
  const rules = ruleBlocks(parsed.rule).map(charsetRule);
  if (rules.length === 0) throw new PasswordPolicyError('password policy: at least one rule "charset" is required');
  const minimum = rules.reduce((sum, rule) => sum + rule.minChars, 0);
  if (minimum > length) {
    throw new PasswordPolicyError(`password policy: the charset minimums add up to ${minimum}, more than the length ${length}`);
  }
  return { length, rules };
}

/** HCL gives `rule "charset" {...}` as [{ charset: [{...}] }]; other rule kinds are refused by name. */
function ruleBlocks(value: unknown): unknown[] {
  if (value === undefined) return [];
  const labelled = Array.isArray(value) ? value : [value];
  return labelled.flatMap((block) => {
    if (!isRecord(block)) throw new PasswordPolicyError('password policy: a rule must be a block');
    return Object.entries(block).flatMap(([kind, bodies]) => {
      if (kind !== 'charset') throw new PasswordPolicyError(`password policy: unknown rule type "${kind}"`);
      return Array.isArray(bodies) ? bodies : [bodies];
    });
  });
}

function charsetRule(body: unknown): CharsetRule {
  if (!isRecord(body)) throw new PasswordPolicyError('password policy: a rule "charset" must be a block');
  if (typeof body.charset !== 'string' || body.charset === '') {
    throw new PasswordPolicyError('password policy: rule "charset" needs a non-empty "charset"');
  }
  const minChars = body['min-chars'] ?? 0;
  if (typeof minChars !== 'number' || !Number.isInteger(minChars) || minChars < 0) {
    throw new PasswordPolicyError('password policy: "min-chars" must be a non-negative integer');
  }
  return { charset: [...new Set(body.charset)].join(''), minChars };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const DEFAULT_PASSWORD_POLICY: PasswordPolicy = parsePasswordPolicy(DEFAULT_PASSWORD_POLICY_HCL);

/**
 * A password meeting every minimum: the required characters of each rule first, the rest from the
 * union of all charsets, then a uniform shuffle so the required ones sit anywhere.
 */
export function generatePassword(policy: PasswordPolicy): string {
  const pick = (charset: string): string => {
    const chars = [...charset]; // code points, so a charset may hold any Unicode character
    return chars[randomInt(chars.length)];
  };
  const union = [...new Set(policy.rules.map((rule) => rule.charset).join(''))].join('');
  const chars = policy.rules.flatMap((rule) => Array.from({ length: rule.minChars }, () => pick(rule.charset)));
  while (chars.length < policy.length) chars.push(pick(union));
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j], chars[i]];
  }
  return chars.join('');
}

/**
 * Why a chosen password does not satisfy a policy (too short, too few of a rule's characters, or a
 * character outside every charset), or undefined when it does. The answer never quotes the password.
 */
export function passwordProblem(policy: PasswordPolicy, password: string): string | undefined {
  const chars = [...password];
  if (chars.length < policy.length) return `must be at least ${policy.length} characters long`;
  const union = new Set(policy.rules.flatMap((rule) => [...rule.charset]));
  if (chars.some((char) => !union.has(char))) return 'holds a character that no rule of the password policy allows';
  for (const rule of policy.rules) {
    const allowed = new Set(rule.charset);
    const count = chars.filter((char) => allowed.has(char)).length;
    if (count < rule.minChars) return `needs at least ${rule.minChars} of the characters "${rule.charset}"`;
  }
  return undefined;
}
