import type { SvcClient } from '@svc/sdk';
import type { FlagSpecs, ParsedArgs } from './args';

export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export type InputStream = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };

export interface CliIO {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: InputStream;
  env: Record<string, string | undefined>;
}

export type OutputFormat = 'table' | 'json' | 'yaml';

export interface CommandContext {
  client: SvcClient;
  io: CliIO;
  format: OutputFormat;
  /** `-field=NAME`: print only this field's value. */
  field?: string;
}

interface CommandDeclaration {
  /** Arguments after the name, for the usage line. */
  args: string;
  summary: string;
  flags: FlagSpecs;
}

/** One command: a module under commands/ exporting it as `command`, listed in registry.ts. */
export interface Command extends CommandDeclaration {
  local?: false;
  /** Exit code when talking to the API fails; default 2 (status uses 1 because 2 means sealed). */
  apiErrorExitCode?: number;
  run(ctx: CommandContext, args: ParsedArgs): Promise<number>;
}

/** A command that works on this machine without the API (`operator migrate`): it takes its own flags alone and gets no client. */
export interface LocalCommand extends CommandDeclaration {
  local: true;
  run(io: CliIO, args: ParsedArgs): Promise<number>;
}

export function println(stream: OutputStream, text = ''): void {
  stream.write(`${text}\n`);
}
