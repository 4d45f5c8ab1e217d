import { ServiceError } from '@svc/api-contract';
import type { HashOptions } from './hash';

/** Options every device type accepts. */
export interface CommonDeviceOptions extends HashOptions {
  /** Written before each JSON document, on the same line. */
  prefix: string;
}

const COMMON_OPTION_NAMES = ['log_raw', 'hmac_accessor', 'elide_list_responses', 'format', 'prefix'];

function invalidOption(message: string): ServiceError {
  return ServiceError.badRequest(message);
}

/** Rejects options no device type or this device type understands, naming them. */
export function rejectUnknownOptions(options: Record<string, string>, deviceOptionNames: readonly string[]): void {
  const known = new Set([...COMMON_OPTION_NAMES, ...deviceOptionNames]);
  const unknown = Object.keys(options).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw invalidOption(`unknown audit device option(s): ${unknown.map((name) => `"${name}"`).join(', ')}`);
  }
}

/** Go's strconv.ParseBool spellings, which is what Vault users write. */
const BOOLEAN_SPELLINGS: Record<string, boolean> = {
  '1': true, t: true, T: true, true: true, TRUE: true, True: true,
  '0': false, f: false, F: false, false: false, FALSE: false, False: false,
};

export function parseBooleanOption(options: Record<string, string>, name: string, fallback: boolean): boolean {
  const raw = options[name];
  if (raw === undefined || raw === '') return fallback;
  const value = BOOLEAN_SPELLINGS[raw];
  if (value === undefined) throw invalidOption(`option "${name}" must be a boolean, got "${raw}"`);
  return value;
}

export function parseCommonOptions(options: Record<string, string>): CommonDeviceOptions {
  const format = options.format || 'json';
  if (format === 'jsonx') throw invalidOption('option "format": "jsonx" is not supported; use "json"');
  if (format !== 'json') throw invalidOption(`option "format" must be "json", got "${format}"`);
  return {
    logRaw: parseBooleanOption(options, 'log_raw', false),
    hmacAccessor: parseBooleanOption(options, 'hmac_accessor', true),
    elideListResponses: parseBooleanOption(options, 'elide_list_responses', false),
    prefix: options.prefix ?? '',
  };
}

/**
 * Parses a chmod-style octal mode. 0 means "leave the file's mode alone". Execute bits are refused,
 * as Vault refuses them: an audit log is never a program.
 */
export function parseFileModeOption(options: Record<string, string>, name: string, fallback: number): number {
  const raw = options[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-7]{1,4}$/.test(raw)) throw invalidOption(`option "${name}" must be an octal file mode such as "0600", got "${raw}"`);
  const mode = parseInt(raw, 8);
  if (mode > 0o777) throw invalidOption(`option "${name}" may only hold permission bits, got "${raw}"`);
  if ((mode & 0o111) !== 0) throw invalidOption(`option "${name}" must not grant execute permission, got "${raw}"`);
  return mode;
}
