import { ConfigError, parseHcl } from '@svc/config';
import { ServiceError } from '@svc/api-contract';

export type RawObject = Record<string, unknown>;

/** A policy document's top-level object, and (for HCL) the line of each `path` block. */
export interface PolicySource {
  root: RawObject;
  /** Line of the `occurrence`-th (0-based) block written as `path "<label>"`, when known. */
  blockLine(label: string, occurrence: number): number | undefined;
}

/**
 * Reads policy text as JSON when it starts with `{`, otherwise as HCL. JSON gets its own parser:
 * the HCL library's JSON mode accepts truncated documents and mangles array-wrapped blocks.
 */
export function readPolicySource(label: string, text: string): PolicySource {
  if (text.trimStart().startsWith('{')) {
    const root = parseJson(label, text);
    if (!isObject(root)) throw ServiceError.badRequest(`${label}: the JSON document must be an object`);
    return { root, blockLine: () => undefined };
  }
  const lines = hclBlockLines(text);
  return { root: parseHclDocument(label, text), blockLine: (name, occurrence) => lines.get(name)?.[occurrence] };
}

function parseHclDocument(label: string, text: string): RawObject {
  try {
    return parseHcl(text, label) as RawObject;
  } catch (err) {
    if (err instanceof ConfigError) throw ServiceError.badRequest(err.message);
    throw err;
  }
}

function parseJson(label: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const message = (err as Error).message;
    const position = / at position (\d+)/.exec(message);
    const where = position ? ` at ${lineAndColumn(text, Number(position[1]))}` : '';
    // V8 sometimes quotes the whole document; policy values must not echo back in errors.
    const summary = message.replace(/, ".*" is not valid JSON$/s, '').replace(/ (?:in JSON )?at position \d+.*$/s, '');
    throw ServiceError.badRequest(`${label}: invalid JSON${where}: ${summary}`);
  }
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line} column ${offset - before.lastIndexOf('\n')}`;
}

/** A `path "<label>"` block header at the start of a line (comments start with # or //, so never match). */
const BLOCK_HEADER = /^[ \t]*path[ \t]*("(?:[^"\\\n]|\\.)*")/gm;

/** Block label -> lines of its headers in file order, which is the order the HCL parser keeps. */
function hclBlockLines(text: string): Map<string, number[]> {
  const lines = new Map<string, number[]>();
  for (const match of text.matchAll(BLOCK_HEADER)) {
    const label = decodeQuoted(match[1]);
    if (label === undefined) continue;
    const line = text.slice(0, match.index).split('\n').length;
    lines.set(label, [...(lines.get(label) ?? []), line]);
  }
  return lines;
}

/** HCL string escapes are JSON's for everything a path pattern plausibly holds. */
function decodeQuoted(quoted: string): string | undefined {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is RawObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The objects of a block or map value: HCL wraps each in a list; JSON may or may not. */
export function objectsOf(value: unknown): RawObject[] | undefined {
  const items: unknown[] = Array.isArray(value) ? value : [value];
  return items.every(isObject) ? items : undefined;
}
