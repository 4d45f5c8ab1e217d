import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { SVC_BIN } from '@svc/local-cluster';

/**
 * Validates an OpenAPI document with the maintained @seriousme/openapi-schema-validator. It runs in a
 * child Node process: the package is ESM-only and Jest's CommonJS runtime cannot load it.
 */
export function validateOpenApi(document: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const script = `
    const chunks = [];
    process.stdin.on('data', (chunk) => chunks.push(chunk));
    process.stdin.on('end', async () => {
      const { Validator } = await import('@seriousme/openapi-schema-validator');
      const result = await new Validator().validate(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      process.stdout.write(JSON.stringify(result));
    });`;
  return new Promise((done, fail) => {
    const child = execFile(process.execPath, ['-e', script], { cwd: dirname(dirname(SVC_BIN)), maxBuffer: 64 * 1024 * 1024 }, (err, stdout) =>
      err ? fail(err) : done(JSON.parse(stdout)),
    );
    child.stdin?.end(JSON.stringify(document));
  });
}
