import { UsageError } from './args';
import type { CliIO } from './context';

const CTRL_C = '\u0003';
const CTRL_D = '\u0004';
const BACKSPACES = new Set(['\u007f', '\b']);

/**
 * Reads one line from stdin. On a terminal the line is read in raw mode so nothing is echoed
 * (the prompt is for unseal keys); from a pipe the first line is taken.
 */
export async function readHiddenLine(io: CliIO, prompt: string): Promise<string> {
  io.stderr.write(prompt);
  const { stdin } = io;
  const raw = Boolean(stdin.isTTY && stdin.setRawMode);
  if (raw) stdin.setRawMode!(true);
  let line = '';
  try {
    for await (const chunk of stdin) {
      for (const char of chunk.toString()) {
        if (char === '\r' || char === '\n' || char === CTRL_D) return line;
        if (char === CTRL_C) throw new UsageError('interrupted');
        line = BACKSPACES.has(char) && raw ? line.slice(0, -1) : line + char;
      }
    }
    return line;
  } finally {
    if (raw) stdin.setRawMode!(false);
    io.stderr.write('\n');
  }
}

export async function readAll(io: CliIO): Promise<string> {
  let text = '';
  for await (const chunk of io.stdin) text += chunk.toString();
  return text;
}
