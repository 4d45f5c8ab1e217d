import { ServiceError } from '@svc/api-contract';
import { describeValue } from './describe';

const NANOS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign, as Go accepts
  μs: 1_000n, // U+03BC Greek mu, as Go accepts
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
  d: 86_400_000_000_000n,
};
const NANOS_PER_SECOND = NANOS_PER_UNIT.s;

/** One term of a Go duration: a decimal number (optionally fractional) followed by a unit. */
const TERM = /(\d+)?(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h|d)/y;
const SECONDS = /^\d+$/;

/**
 * Parses a duration into whole seconds, rounding down.
 *
 * Accepted: a non-negative number or numeric string (seconds), or a Go-style duration string made of
 * terms such as "30s", "1h30m", "1.5h", "500ms", plus the "d" (24h) unit Vault also accepts.
 * Sub-second parts are truncated, so "1500ms" is 1 and "500ms" is 0. Negative values, unitless
 * fractions ("1.5") and anything else throw a 400.
 */
export function parseDuration(value: unknown): number {
  const seconds = durationSeconds(value);
  if (seconds === undefined) throw ServiceError.badRequest(`${describeValue(value)} ${INVALID_DURATION}`);
  return seconds;
}

export const INVALID_DURATION = 'is not a valid duration';

/** The duration in whole seconds (rounded down), or undefined when the value is not a duration. */
export function durationSeconds(value: unknown): number | undefined {
  return durationIn(NANOS_PER_SECOND, value);
}

/** The duration in whole milliseconds (rounded down), or undefined when the value is not a duration. */
export function durationMilliseconds(value: unknown): number | undefined {
  return durationIn(NANOS_PER_UNIT.ms, value);
}

function durationIn(nanosPerUnit: bigint, value: unknown): number | undefined {
  if (typeof value === 'number') {
    const units = Math.floor(value * Number(NANOS_PER_SECOND / nanosPerUnit));
    return value >= 0 && units <= Number.MAX_SAFE_INTEGER ? units : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const nanos = SECONDS.test(text) ? BigInt(text) * NANOS_PER_SECOND : goDurationNanos(text);
  return nanos === undefined ? undefined : toSafeNumber(nanos / nanosPerUnit);
}

function goDurationNanos(text: string): bigint | undefined {
  if (text === '') return undefined;
  let total = 0n;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < text.length) {
    const term = TERM.exec(text);
    if (!term) return undefined;
    const [, whole = '', fraction = '', unit] = term;
    if (whole === '' && fraction === '') return undefined; // a bare "." or a unit without a number
    const perUnit = NANOS_PER_UNIT[unit];
    total += BigInt(whole || '0') * perUnit + (BigInt(fraction || '0') * perUnit) / 10n ** BigInt(fraction.length);
  }
  return total;
}

function toSafeNumber(units: bigint): number | undefined {
  return units <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(units) : undefined;
}

/** Whole seconds as Go's `Duration.String()` writes them (`0s`, `45s`, `30m0s`, `768h0m0s`): hours are the largest unit. */
export function formatDuration(seconds: number): string {
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  if (hours > 0) return `${hours}h${minutes}m${rest}s`;
  if (minutes > 0) return `${minutes}m${rest}s`;
  return `${rest}s`;
}
