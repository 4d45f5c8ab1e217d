import {
  DEFAULT_PASSWORD_POLICY,
  DEFAULT_PASSWORD_POLICY_HCL,
  generatePassword,
  parsePasswordPolicy,
  PasswordPolicyError,
} from './index';

const count = (text: string, charset: string): number => [...text].filter((c) => charset.includes(c)).length;

describe('password policies', () => {
  it('the default policy gives 20 characters with an upper, a lower, a digit and a dash', () => {
    expect(parsePasswordPolicy(DEFAULT_PASSWORD_POLICY_HCL)).toEqual(DEFAULT_PASSWORD_POLICY);
    for (let i = 0; i < 200; i++) {
      const password = generatePassword(DEFAULT_PASSWORD_POLICY);
      expect(password).toMatch(/^[A-Za-z0-9-]{20}$/);
      expect(password).toMatch(/[A-Z]/);
      expect(password).toMatch(/[a-z]/);
      expect(password).toMatch(/[0-9]/);
      expect(password).toContain('-');
    }
  });

  it('honours every minimum and draws only from the charsets', () => {
    const policy = parsePasswordPolicy(`
      length = 12
      rule "charset" {
        charset = "ab"
        min-chars = 5
      }
      rule "charset" {
        charset = "!?"
        min-chars = 7
      }`);
    expect(policy).toEqual({ length: 12, rules: [{ charset: 'ab', minChars: 5 }, { charset: '!?', minChars: 7 }] });
    const password = generatePassword(policy);
    expect(password).toHaveLength(12);
    expect(count(password, 'ab')).toBe(5);
    expect(count(password, '!?')).toBe(7);
  });

  it('passwords differ between calls', () => {
    const passwords = new Set(Array.from({ length: 50 }, () => generatePassword(DEFAULT_PASSWORD_POLICY)));
    expect(passwords.size).toBe(50);
  });

  it.each([
    ['length = 2\nrule "charset" { charset = "a" }', '"length" must be an integer from 4'],
    ['rule "charset" { charset = "a" }', '"length" must be an integer'],
    ['length = 8', 'at least one rule "charset" is required'],
    ['length = 8\nrule "charset" { min-chars = 1 }', 'needs a non-empty "charset"'],
    ['length = 8\nrule "charset" {\ncharset = "ab"\nmin-chars = -1\n}', '"min-chars" must be a non-negative integer'],
    ['length = 4\nrule "charset" {\ncharset = "ab"\nmin-chars = 5\n}', 'add up to 5, more than the length 4'],
    ['length = 8\nrule "words" { list = "a" }', 'unknown rule type "words"'],
    ['length = = 8', 'invalid HCL'],
  ])('refuses %j', (text, message) => {
    expect(() => parsePasswordPolicy(text)).toThrow(PasswordPolicyError);
    expect(() => parsePasswordPolicy(text)).toThrow(message);
  });
});
