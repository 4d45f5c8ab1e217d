const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;

/**
 * Milliseconds of a duration as Vault writes them: a number of seconds (number or numeric string)
 * or a string of unit-suffixed parts such as "768h" or "1h30m". Undefined when it is neither.
 */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  if (!WHOLE.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit];
  return total;
}
