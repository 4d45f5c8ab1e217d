import { writeFile } from 'node:fs/promises';
import { errorOf } from '@svc/api-contract';
import { UsageError } from '../args';
import type { Command } from '../context';
import { println } from '../context';
import { exactly } from '../paths';
import { readPolicyFile } from './write';

export const command: Command = {
  args: 'FILE',
  summary: 'Check the HCL policy in FILE and rewrite it in the canonical layout: two-space indents, "key = value"; comments stay.',
  flags: {},
  async run(ctx, { positionals }) {
    const [file] = exactly('policy fmt', positionals, ['FILE']);
    const text = await readPolicyFile(file);
    if (text.trimStart().startsWith('{')) throw new UsageError(`${file} is JSON: policy fmt formats HCL`);
    // The policy parser is the server's (with its libraries): loaded only when fmt runs.
    const { parsePolicy } = await import('@svc/acl');
    try {
      parsePolicy('fmt', text);
    } catch (err) {
      throw new UsageError(`${file} is not a valid policy: ${errorOf(err).errors.join('; ')}`);
    }
    await writeFile(file, formatHcl(text));
    println(ctx.io.stdout, `Success! Formatted policy: ${file}`);
    return 0;
  },
};

/** Indents by nesting depth (`{` and `[` outside strings and comments) and spaces `=` in attributes. */
export function formatHcl(text: string): string {
  let depth = 0;
  const lines = text.split('\n').map((raw) => {
    const line = raw.trim();
    const code = line.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/(#|\/\/).*$/, '');
    const closesFirst = /^[}\]]/.test(code) ? 1 : 0;
    const opened = (code.match(/[{[]/g) ?? []).length - (code.match(/[}\]]/g) ?? []).length;
    const indent = '  '.repeat(Math.max(0, depth - closesFirst));
    depth = Math.max(0, depth + opened);
    if (line === '') return '';
    return indent + line.replace(/^([\w-]+|"[^"]*")\s*=\s*/, '$1 = ').replace(/^(path\s+"[^"]*")\s*\{/, '$1 {');
  });
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;
}
