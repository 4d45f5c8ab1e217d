import type { SvcClient } from '@svc/sdk';
import type { FlagSpecs, ParsedArgs } from './args';

export interface OutputStream {
  write(chunk: string): unknown;
}

export type InputStream = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };

export interface CliIO {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: InputStream;
  env: Record<string, string | undefined>;
}

export type OutputFormat = 'table' | 'json';

export interface CommandContext {
  client: SvcClient;
  io: CliIO;
  format: OutputFormat;
}

export interface Command {
  /** Words after `svc`, e.g. "operator init". */
  name: string;
  /** Arguments after the name, for the usage line. */
  args: string;
  summary: string;
  flags: FlagSpecs;
  /** Exit code when talking to the API fails; default 2 (status uses 1 because 2 means sealed). */
  apiErrorExitCode?: number;
  run(ctx: CommandContext, args: ParsedArgs): Promise<number>;
}

export function println(stream: OutputStream, text = ''): void {
  stream.write(`${text}\n`);
}
