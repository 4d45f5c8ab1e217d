/**
 * The load generator, in a process of its own (forked by `measure` in run.ts), so that what the
 * bench process does (reading logs, gathering results) never competes with the load or is counted
 * as the server's cost. Takes autocannon's options over IPC and answers with its result.
 */
import autocannon from 'autocannon';

process.once('message', (options: autocannon.Options) => {
  autocannon(options).then(
    (result) => process.send!({ result }, () => process.disconnect()),
    (err: unknown) => process.send!({ error: err instanceof Error ? err.message : String(err) }, () => process.disconnect()),
  );
});
