const MAX_SHOWN = 64;

/** A short, JSON-like rendering of a client-supplied value for error messages (never for secrets). */
export function describeValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value); // circular structures cannot come from JSON, but be safe
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}
