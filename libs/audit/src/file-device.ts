import { ServiceError } from '@svc/api-contract';
import { hashStructure, hmacSha256, type HmacFn } from './hash';
import { AppendFileSink, AuditFileOpenError, discardSink, stdoutSink, type LineSink } from './line-sink';
import { parseCommonOptions, parseFileModeOption, rejectUnknownOptions, type CommonDeviceOptions } from './options';
import type { AuditDevice, AuditDeviceSettings, AuditLine, NonHmacKeys } from './types';

const FILE_OPTION_NAMES = ['file_path', 'mode'];
const DEFAULT_FILE_MODE = 0o600;

/**
 * Vault's `file` audit device: one JSON document per line, appended to a file (or written to
 * stdout, or discarded). The file is opened, and created if missing, when the device is built, so a
 * bad `file_path` is refused when the device is enabled rather than on the first request.
 */
export class FileAuditDevice implements AuditDevice {
  readonly type = 'file';
  readonly description: string;
  readonly local: boolean;
  readonly options: Record<string, string>;
  private readonly config: CommonDeviceOptions;
  private readonly hmac: HmacFn;
  private readonly sink: LineSink;

  constructor(
    readonly path: string,
    options: Record<string, string>,
    salt: Buffer,
    settings: AuditDeviceSettings = {},
  ) {
    this.options = { ...options };
    this.description = settings.description ?? '';
    this.local = settings.local ?? false;
    rejectUnknownOptions(options, FILE_OPTION_NAMES);
    this.config = parseCommonOptions(options);
    const mode = parseFileModeOption(options, 'mode', DEFAULT_FILE_MODE);
    this.hmac = hmacSha256(salt);
    this.sink = openSink(options.file_path, mode);
  }

  async log(line: AuditLine, nonHmacKeys: NonHmacKeys = {}): Promise<void> {
    const written = hashStructure(line, this.hmac, { ...this.config, ...nonHmacKeys });
    await this.sink.write(`${this.config.prefix}${JSON.stringify(written)}\n`);
  }

  hash(input: string): string {
    return this.hmac(input);
  }

  /** Closes and reopens the file, so a rotated log is written afresh (Vault does this on SIGHUP). */
  reopen(): Promise<void> {
    return this.sink.reopen();
  }

  close(): Promise<void> {
    return this.sink.close();
  }
}

function openSink(filePath: string | undefined, mode: number): LineSink {
  if (!filePath) throw ServiceError.badRequest('option "file_path" is required');
  if (filePath === 'discard') return discardSink;
  if (filePath === 'stdout') return stdoutSink;
  try {
    return new AppendFileSink(filePath, mode);
  } catch (err) {
    if (err instanceof AuditFileOpenError) throw ServiceError.badRequest(`option "file_path": ${err.message}`);
    throw err;
  }
}
