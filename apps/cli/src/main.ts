import { runAsMain, runServerCommand } from '@svc/server';
import { runClientCommand } from './commands';
import { runClusterCommand } from './cluster';

/** `svc`: the server (`svc server ...`) and the API client commands in one binary. */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'server') return runServerCommand(rest, { stdout: process.stdout, stderr: process.stderr });
  if (command === 'cluster') return runClusterCommand(rest, { stdout: process.stdout, stderr: process.stderr });
  return runClientCommand(argv, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env });
}

runAsMain(main(process.argv.slice(2)), process.stderr);
