import type { OperationDeclaration, PathDeclaration } from '@svc/framework';
import type { GenerateRoot } from './generate-root';

/** A generation of a token from key shares, as the paths drive it. */
export type ShareGeneration = Pick<GenerateRoot, 'status' | 'start' | 'cancel' | 'update'>;

export interface ShareGenerationOptions {
  /** What the generation makes, for help ("root token"). */
  token: string;
  /** How a client decodes the OTP form, for help. */
  decode: string;
  /** Runs before every call (refuses where the generation does not apply). */
  guard?: () => Promise<void>;
  rootNamespace?: boolean;
}

/**
 * `<prefix>/attempt` and `<prefix>/update` of a token made from a threshold of key shares: the
 * root token's, and the DR operation token's (the same machine, `GenerateRoot`).
 */
export function shareGenerationPaths(prefix: string, generation: ShareGeneration, options: ShareGenerationOptions): PathDeclaration[] {
  const operation = (summary: string, run: (f: { get<T>(name: string): T }) => Promise<unknown>): OperationDeclaration => ({
    summary,
    unauthenticated: true,
    ...(options.rootNamespace ? { rootNamespace: true } : {}),
    handler: async (_req, f) => {
      await options.guard?.();
      const raw = await run(f);
      return raw === undefined ? undefined : { raw };
    },
  });
  return [
    {
      pattern: `${prefix}/attempt`,
      synopsis: `Starts, reads or cancels the generation of a ${options.token}.`,
      description: `Without \`pgp_key\` the answer that starts the attempt carries a one-time pad (\`otp\`), shown only then; the finished token comes back XORed with it (${options.decode}). With \`pgp_key\` it comes back encrypted to that key.`,
      fields: { pgp_key: { type: 'string', description: `Base64 PGP public key to encrypt the new ${options.token} with.` } },
      operations: {
        read: operation('Read the progress.', () => generation.status()),
        update: operation('Start a generation.', (f) => generation.start(f.get<string>('pgp_key') || undefined)),
        delete: operation('Cancel the generation.', () => generation.cancel()),
      },
    },
    {
      pattern: `${prefix}/update`,
      synopsis: `Submits one share to the ${options.token} generation in progress.`,
      description: 'The threshold-th share, when the set is right, returns `encoded_token`. A wrong set resets the progress.',
      fields: {
        key: { type: 'string', required: true, sensitive: true, description: 'One unseal or recovery key share (hex or base64).' },
        nonce: { type: 'string', required: true, description: 'Nonce of the attempt, from its status.' },
      },
      operations: { update: operation('Submit a share.', (f) => generation.update(f.get('key'), f.get('nonce'))) },
    },
  ];
}
