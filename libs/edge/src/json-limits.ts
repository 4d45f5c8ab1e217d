import type { JsonLimits } from '@svc/config';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * The first of the listener's JSON limits (Vault's max_json_*) that `body` exceeds, as a message
 * naming it, or undefined. A pass over the bytes, not the parsed values: strings are skipped at
 * memchr speed, so the cost is in the structure, and bodies too small to exceed any limit (most
 * requests) are not looked at. Malformed JSON is left to the parser; the counts are exact for
 * well-formed JSON.
 */
export function exceededJsonLimit(body: Buffer, limits: JsonLimits): string | undefined {
  // Each nesting level takes two bytes, each entry at least two, a string its length and quotes.
  const smallest = Math.min(limits.maxDepth, limits.maxObjectEntryCount, limits.maxArrayElementCount);
  if (body.length <= 2 * smallest && body.length <= limits.maxStringValueLength) return undefined;

  /** Per open container: its commas so far, times two, plus 1 for an array. */
  const open: number[] = [];
  /** The next backslash at or after the current string's position (body.length: none; -1: look again). */
  let nextBackslash = -1;
  for (let i = 0; i < body.length; i++) {
    switch (body[i]) {
      case QUOTE: {
        // Find the closing quote, stepping over escaped characters.
        const start = i + 1;
        let end = start;
        for (;;) {
          const quote = body.indexOf(QUOTE, end);
          if (quote < 0) return undefined; // unterminated: the parser reports it
          if (nextBackslash < end) {
            const found = body.indexOf(BACKSLASH, end);
            nextBackslash = found < 0 ? body.length : found;
          }
          if (nextBackslash < quote) {
            end = nextBackslash + 2;
            nextBackslash = -1;
            continue;
          }
          end = quote;
          break;
        }
        if (end - start > limits.maxStringValueLength) {
          return `a JSON string is longer than max_json_string_value_length (${limits.maxStringValueLength} bytes)`;
        }
        i = end;
        break;
      }
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (open.length >= limits.maxDepth) return `the JSON nesting is deeper than max_json_depth (${limits.maxDepth})`;
        open.push(body[i] === OPEN_ARRAY ? 1 : 0);
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        open.pop();
        break;
      case COMMA: {
        const top = open.length - 1;
        if (top < 0) break;
        const container = (open[top] += 2);
        const entries = (container >> 1) + 1;
        if (container & 1) {
          if (entries > limits.maxArrayElementCount) return `a JSON array has more elements than max_json_array_element_count (${limits.maxArrayElementCount})`;
        } else if (entries > limits.maxObjectEntryCount) {
          return `a JSON object has more entries than max_json_object_entry_count (${limits.maxObjectEntryCount})`;
        }
        break;
      }
    }
  }
  return undefined;
}
