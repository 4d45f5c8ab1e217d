import type { BackendFactory, EngineContext } from '@svc/engine-host';
import {
  addressAllowed,
  Backend,
  DEFAULT_TOKEN_SETTINGS,
  listPath,
  readTokenSettings,
  renewedAuth,
  TOKEN_FIELDS,
  tokenAuth,
  tokenSettingsData,
  type BackendDeclaration,
  type FieldData,
  type FieldMap,
  type MountInfo,
  type TokenSettings,
} from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { parsePasswordPolicy, passwordProblem, PasswordPolicyError } from '@svc/password-policy';
import { hashPassword, verifyPassword } from './password-hash';

/** A user as stored: the password only as its hash. */
interface User extends TokenSettings {
  password_hash: string;
  /** Name of a password policy (sys/policies/password) new passwords must satisfy; '' for none. */
  password_policy: string;
}

const HELP =
  'The userpass auth method: people log in with a username and a password. Usernames are ' +
  'case-insensitive; passwords are kept as scrypt hashes and may be held to a password policy.';

/** The same answer whether the user is unknown or the password wrong. */
const INVALID_LOGIN = 'invalid username or password';

const USERS = 'user/';
const USERNAME: FieldMap = { username: { type: 'string', description: 'Username (case-insensitive).' } };
const PASSWORD: FieldMap = { password: { type: 'string', sensitive: true, required: true, description: 'The password.' } };

export const userpassBackendFactory: BackendFactory = (mount, context) => new Backend(userpassDeclaration(mount, context));

export function userpassDeclaration(mount: MountInfo, context: EngineContext): BackendDeclaration {
  const username = (f: FieldData) => f.params.username.toLowerCase();
  const userOf = (name: string) => context.storage.getJSON<User>(USERS + name);
  const existingUser = async (f: FieldData): Promise<User> => {
    const user = await userOf(username(f));
    if (!user) throw ServiceError.badRequest(`user "${username(f)}" does not exist`);
    return user;
  };
  const putUser = async (f: FieldData, user: User): Promise<undefined> => {
    await context.storage.putJSON(USERS + username(f), user);
    return undefined;
  };

  /** The hash of a new password, once it satisfies the user's password policy. */
  async function newPasswordHash(password: string, policyName: string): Promise<string> {
    if (password === '') throw ServiceError.badRequest('field "password" cannot be empty');
    if (policyName !== '') {
      const text = await context.passwordPolicy(mount.namespace, policyName);
      if (text === undefined) throw ServiceError.badRequest(`field "password_policy": password policy "${policyName}" does not exist`);
      let problem: string | undefined;
      try {
        problem = passwordProblem(parsePasswordPolicy(text), password);
      } catch (err) {
        if (err instanceof PasswordPolicyError) throw ServiceError.badRequest(`password policy "${policyName}": ${err.message}`);
        throw err;
      }
      if (problem) throw ServiceError.badRequest(`field "password" does not satisfy the password policy "${policyName}": it ${problem}`);
    }
    return hashPassword(password);
  }

  async function writeUser(f: FieldData, existing: User | null): Promise<undefined> {
    const policy = f.has('password_policy') ? f.get<string>('password_policy') : (existing?.password_policy ?? '');
    if (!existing && !f.has('password')) throw ServiceError.badRequest('missing required field "password"');
    const settings = readTokenSettings(f, existing ?? DEFAULT_TOKEN_SETTINGS);
    const passwordHash = f.has('password') ? await newPasswordHash(f.get('password'), policy) : existing!.password_hash;
    return putUser(f, { ...settings, password_hash: passwordHash, password_policy: policy });
  }

  return {
    type: 'userpass',
    help: HELP,
    paths: [
      listPath({ pattern: 'users/', synopsis: 'Lists the users.', summary: 'List the users.', names: async () => (await context.storage.list(USERS)).filter((key) => !key.endsWith('/')) }),
      {
        pattern: 'users/:username',
        synopsis: 'Creates, reads, updates or deletes a user.',
        fields: {
          ...USERNAME,
          password: { type: 'string', sensitive: true, description: 'The password; required when the user is created.' },
          password_policy: { type: 'string', description: 'Password policy (sys/policies/password) the user\'s passwords must satisfy.' },
          ...TOKEN_FIELDS,
        },
        existenceCheck: async (_req, f) => (await userOf(username(f))) !== null,
        operations: {
          read: {
            summary: 'Read a user (never the password).',
            handler: async (_req, f) => {
              const user = await userOf(username(f));
              if (!user) return undefined;
              const { password_hash: _hash, ...shown } = user;
              return { data: tokenSettingsData(shown) };
            },
          },
          create: { summary: 'Create a user.', handler: (_req, f) => writeUser(f, null) },
          update: { summary: 'Update a user.', handler: async (_req, f) => writeUser(f, await userOf(username(f))) },
          delete: {
            summary: 'Delete a user.',
            handler: async (_req, f) => {
              await context.storage.delete(USERS + username(f));
              return undefined;
            },
          },
        },
      },
      {
        pattern: 'users/:username/password',
        synopsis: 'Changes a user\'s password.',
        fields: { ...USERNAME, ...PASSWORD },
        operations: {
          update: {
            summary: 'Change the password.',
            handler: async (_req, f) => {
              const user = await existingUser(f);
              return putUser(f, { ...user, password_hash: await newPasswordHash(f.get('password'), user.password_policy) });
            },
          },
        },
      },
      {
        pattern: 'users/:username/policies',
        synopsis: 'Changes a user\'s token policies.',
        fields: { ...USERNAME, token_policies: TOKEN_FIELDS.token_policies, policies: TOKEN_FIELDS.policies },
        operations: {
          update: {
            summary: 'Change the token policies.',
            handler: async (_req, f) => {
              if (!f.has('token_policies') && !f.has('policies')) throw ServiceError.badRequest('missing required field "token_policies"');
              const user = await existingUser(f);
              return putUser(f, { ...user, ...readTokenSettings(f, user) });
            },
          },
        },
      },
      {
        pattern: 'login/:username',
        synopsis: 'Logs in with a username and password.',
        fields: { ...USERNAME, ...PASSWORD },
        operations: {
          update: {
            summary: 'Log in.',
            unauthenticated: true,
            handler: async (req, f) => {
              const name = username(f);
              const user = await userOf(name);
              // A missing user costs the same hash as a wrong password.
              if (!(await verifyPassword(f.get('password'), user?.password_hash)) || !user) throw ServiceError.badRequest(INVALID_LOGIN);
              if (!addressAllowed(user.token_bound_cidrs, req.remoteAddress)) {
                throw ServiceError.forbidden(`permission denied: source address "${req.remoteAddress ?? ''}" is not allowed by the user's token_bound_cidrs`);
              }
              return { auth: tokenAuth(user, { displayName: name, metadata: { username: name }, alias: { name }, internalData: { username: name } }) };
            },
          },
        },
      },
    ],
    // The user must still exist; the token takes the user's current policies and TTLs.
    renewAuth: async (_req, auth) => {
      const name = String(auth.internalData?.username ?? '');
      const user = await userOf(name);
      if (!user) throw ServiceError.badRequest(`user "${name}" no longer exists; the token cannot be renewed`);
      return renewedAuth(user, auth);
    },
  };
}
