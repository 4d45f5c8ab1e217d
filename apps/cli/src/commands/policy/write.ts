import { readFile } from 'node:fs/promises';
import { UsageError } from '../args';
import type { Command } from '../context';
import { println } from '../context';
import { readAll } from '../stdin';
import { exactly } from '../paths';

export const command: Command = {
  args: 'NAME PATH | -',
  summary: 'Upload the ACL policy NAME from the file at PATH (HCL or JSON), or from stdin with -.',
  flags: {},
  async run(ctx, { positionals }) {
    const [name, source] = exactly('policy write', positionals, ['NAME', 'PATH']);
    const policy = source === '-' ? await readAll(ctx.io) : await readPolicyFile(source);
    await ctx.client.write(`sys/policies/acl/${name}`, { policy });
    println(ctx.io.stdout, `Success! Uploaded policy: ${name}`);
    return 0;
  },
};

export async function readPolicyFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read policy file "${path}" (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}
