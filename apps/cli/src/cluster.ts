import { startTopology } from '@svc/local-cluster';
import { SvcClient } from '@svc/sdk';

const USAGE = `Usage: svc cluster [-gateways=N] [-services=transit,database,cloud] [-no-init] [-quiet]

Starts the distributed topology as separate local processes (gateway replicas and engine
services) against the NATS, PostgreSQL and Redis of this machine (SVC_TEST_NATS_URL,
SVC_TEST_POSTGRES_URL, SVC_TEST_REDIS_ADDRESS override the defaults; SVC_TEST_WORKERS sets each
gateway's workers, default 1), with a cluster key made for the run (bus cluster_key_file); initializes and unseals it, prints the addresses and the
root token, and runs until interrupted. Every process's log lines are shown on stderr, each
after the name of its process ("[gateway-0] ..."); -quiet hides them. The end-to-end tests start
the same topology through the same function.
`;

/** `svc cluster`: the whole distributed topology on one machine, for development and tests. */
export async function runClusterCommand(argv: string[], io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  let gateways = 2;
  let services = ['transit', 'database', 'cloud'];
  let init = true;
  let quiet = false;
  for (const arg of argv) {
    const match = /^--?([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (match && ['h', 'help'].includes(match[1])) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (match?.[1] === 'quiet' && match[2] === undefined) quiet = true;
    else if (match?.[1] === 'gateways' && /^[1-9]\d*$/.test(match[2] ?? '')) gateways = Number(match[2]);
    else if (match?.[1] === 'services' && match[2] !== undefined) services = match[2].split(',').filter(Boolean);
    else if (match?.[1] === 'no-init' && match[2] === undefined) init = false;
    else {
      io.stderr.write(`Error: unexpected argument "${arg}"\n\n${USAGE}`);
      return 1;
    }
  }
  const onLog = quiet ? undefined : (name: string, line: string) => io.stderr.write(`[${name}] ${line}\n`);
  const topology = await startTopology('distributed', { gateways, services, onLog });
  io.stdout.write(`Gateways: ${topology.urls.join(' ')}\nServices: ${services.join(', ') || 'none'}\n`);
  if (init) {
    const { sys } = new SvcClient({ address: topology.urls[0] });
    const { keys, root_token } = await sys.init({ secret_shares: 1, secret_threshold: 1 });
    await sys.unseal(keys[0]);
    io.stdout.write(`Unseal Key: ${keys[0]}\nRoot Token: ${root_token}\n`);
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await topology.stop();
  return 0;
}
