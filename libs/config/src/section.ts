import { ConfigError } from './errors';
import { durationMilliseconds } from '@svc/framework';

export type RawObject = Record<string, unknown>;

export function isObject(value: unknown): value is RawObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const TRUE_WORDS = new Set(['1', 't', 'true']);
const FALSE_WORDS = new Set(['0', 'f', 'false']);

/**
 * Typed, tracked access to one stanza's fields. `where` prefixes every error
 * (`config.hcl: listener "tcp" [0]`); fields never read are reported by `warnUnknown`.
 * Errors name the field and the expected kind, never the value (it may be a secret).
 */
export class Section {
  private readonly read = new Set<string>();

  constructor(
    readonly where: string,
    private readonly body: RawObject,
  ) {}

  error(message: string): ConfigError {
    return new ConfigError(`${this.where}: ${message}`);
  }

  /** The raw value, marking the field as known. */
  raw(key: string): unknown {
    this.read.add(key);
    const value = this.body[key];
    return value === null ? undefined : value;
  }

  string(key: string): string | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    if (typeof value === 'number') return String(value);
    throw this.error(`${key} must be a string`);
  }

  requiredString(key: string, requirement = 'is required'): string {
    const value = this.string(key);
    if (value === undefined || value === '') throw this.error(`${key} ${requirement}`);
    return value;
  }

  /** Booleans as Vault accepts them: true/false, 1/0, "true"/"false", "t"/"f", "1"/"0". */
  bool(key: string, fallback: boolean): boolean {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    if (typeof value === 'boolean') return value;
    if (typeof value === 'number') return value !== 0;
    if (typeof value === 'string') {
      const word = value.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
    }
    throw this.error(`${key} must be a boolean (true or false)`);
  }

  int(key: string): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof number === 'number' && Number.isInteger(number)) return number;
    throw this.error(`${key} must be an integer`);
  }

  durationMs(key: string): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    const ms = durationMilliseconds(value);
    if (ms === undefined) throw this.error(`${key} must be a duration such as "30s", "768h" or a number of seconds`);
    return ms;
  }

  durationSeconds(key: string): number | undefined {
    const ms = this.durationMs(key);
    if (ms === undefined) return undefined;
    if (ms % 1000 !== 0) throw this.error(`${key} must be a whole number of seconds`);
    return ms / 1000;
  }

  /** A list of strings; a single string is split on commas. */
  stringList(key: string): string[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value.split(',').map((item) => item.trim()).filter(Boolean);
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
    throw this.error(`${key} must be a list of strings`);
  }

  /** Adds a warning for each field present in the stanza that no reader asked for. */
  warnUnknown(warnings: string[]): void {
    for (const key of this.unknownFields()) warnings.push(`${this.where}: unknown field "${key}" ignored`);
  }

  /** Throws if the stanza has fields no reader asked for, naming them and those it knows (`kind`: what a field is called there). */
  rejectUnknown(kind = 'field'): void {
    const unknown = this.unknownFields();
    if (unknown.length === 0) return;
    const names = (keys: Iterable<string>) => [...keys].map((key) => `"${key}"`).join(', ');
    throw this.error(`unknown ${kind}${unknown.length > 1 ? 's' : ''} ${names(unknown)} (expected: ${names(this.read) || 'none'})`);
  }

  private unknownFields(): string[] {
    return Object.keys(this.body).filter((key) => !this.read.has(key));
  }
}
