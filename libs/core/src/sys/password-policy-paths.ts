import { passwordPolicyKey } from '@svc/engine-host';
import { listResponse, type PathDeclaration, type Request } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { generatePassword, parsePasswordPolicy, PasswordPolicyError } from '@svc/password-policy';
import { createView, type StorageView, type TransactionalStore } from '@svc/storage';

/** What sys/policies/password uses of the core's parts. */
export interface PasswordPolicyPathsDeps {
  /** Policies are kept outside every namespace's storage, where every engine's context reads them. */
  barrier: TransactionalStore;
}

function parsed(text: string) {
  try {
    return parsePasswordPolicy(text);
  } catch (err) {
    if (err instanceof PasswordPolicyError) throw ServiceError.badRequest(`invalid password policy: ${err.message}`);
    throw err;
  }
}

/** sys/policies/password: named password policies that engines (database) generate passwords with. */
export function passwordPolicyPaths(core: PasswordPolicyPathsDeps): PathDeclaration[] {
  const shared = (): StorageView => createView(core.barrier, '');
  const key = (req: Request, name: string) => passwordPolicyKey(req.mount.namespace, name);
  const read = async (req: Request, name: string): Promise<string> => {
    const text = (await shared().get(key(req, name)))?.toString('utf8');
    if (text === undefined) throw ServiceError.notFound(`password policy "${name}" does not exist`);
    return text;
  };
  return [
    {
      pattern: 'policies/password/',
      synopsis: 'Lists password policies.',
      operations: {
        list: {
          summary: 'List password policies.',
          handler: async (req) => listResponse(await shared().list(key(req, ''))),
        },
      },
    },
    {
      pattern: 'policies/password/:name',
      synopsis: 'Reads, writes or deletes a password policy (HCL: length and charset rules).',
      fields: { policy: { type: 'string', required: true, description: 'The policy, in HCL (base64 accepted).' } },
      operations: {
        read: { summary: 'Read a password policy.', handler: async (req, f) => ({ data: { policy: await read(req, f.params.name) } }) },
        update: {
          summary: 'Write a password policy.',
          handler: async (req, f) => {
            let text = f.get<string>('policy');
            if (!/[={]/.test(text)) text = Buffer.from(text, 'base64').toString('utf8');
            parsed(text);
            await shared().put(key(req, f.params.name), Buffer.from(text, 'utf8'));
            return undefined;
          },
        },
        delete: {
          summary: 'Delete a password policy.',
          handler: async (req, f) => {
            await shared().delete(key(req, f.params.name));
            return undefined;
          },
        },
      },
    },
    {
      pattern: 'policies/password/:name/generate',
      synopsis: 'Generates a password from a policy.',
      operations: {
        read: { summary: 'Generate a password.', handler: async (req, f) => ({ data: { password: generatePassword(parsed(await read(req, f.params.name))) } }) },
      },
    },
  ];
}
