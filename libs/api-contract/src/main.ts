/**
 * Runs a command as the process's main: its result becomes the exit code; a failure nothing caught
 * is reported on stderr as one line and exits 1, rather than as Node's unhandled-rejection crash.
 */
export function runAsMain(command: Promise<number>, stderr: NodeJS.WritableStream): void {
  command.then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
