import { runAsMain } from '@svc/api-contract';
import { runClientCommand } from './commands';

const streams = { stdout: process.stdout, stderr: process.stderr };

/**
 * `svc`: the server (`svc server ...`), the local topology (`svc cluster`) and the API client
 * commands in one binary. Server code is loaded only for the first two, so a client command starts
 * without it.
 */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'server') return (await import('@svc/server')).runServerCommand(rest, streams);
  if (command === 'cluster') return (await import('./cluster')).runClusterCommand(rest, streams);
  return runClientCommand(argv, { ...streams, stdin: process.stdin, env: process.env });
}

runAsMain(main(process.argv.slice(2)), process.stderr);
