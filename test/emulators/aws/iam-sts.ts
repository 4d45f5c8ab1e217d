/**
 * An IAM + STS emulator at the wire level: the AWS query protocol (`POST /`, form body, XML
 * answers), one in-memory account, every request's SigV4 signature checked (`sigv4.ts`). It keeps
 * IAM's rules that matter to a credentials engine: at most two access keys per user, DeleteUser
 * refused while the user still has keys, policies, groups or a login profile, AssumeRole only on
 * existing roles, GetFederationToken only with a user's long-term keys. Credentials it issues,
 * STS session credentials included, sign requests to it until they expire or are deleted.
 *
 * `state` is what the provider holds (tests set up and inspect it directly); `failNext` injects a
 * provider error into the next calls of one action.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySigV4, type SigningSecret } from './sigv4';

export const ACCOUNT_ID = '123456789012';

export interface IamUser {
  name: string;
  id: string;
  arn: string;
  path: string;
  createDate: Date;
  permissionsBoundary?: string;
  tags: Record<string, string>;
  inlinePolicies: Map<string, string>;
  attachedPolicies: Set<string>;
  groups: Set<string>;
  loginProfile: boolean;
}

export interface IamGroup {
  name: string;
  id: string;
  arn: string;
  createDate: Date;
  inlinePolicies: Map<string, string>;
  attachedPolicies: Set<string>;
}

export interface IamRole {
  name: string;
  id: string;
  arn: string;
  path: string;
  maxSessionDuration: number;
}

export interface InstanceProfile {
  name: string;
  id: string;
  arn: string;
  /** Names of the roles in the profile (IAM allows one). */
  roles: string[];
}

export interface AccessKey {
  id: string;
  secret: string;
  userName: string;
  createDate: Date;
}

export interface StsSession {
  id: string;
  secret: string;
  token: string;
  expiresAt: Date;
  /** The caller identity the session has: an assumed-role or federated-user ARN. */
  arn: string;
  userId: string;
  /** The session policy and managed policy ARNs the caller passed to filter the session's permissions. */
  policy?: string;
  policyArns: string[];
}

export interface ProviderFault {
  status: number;
  code: string;
  message: string;
}

export class EmulatorError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
function identifier(prefix: string): string {
  return prefix + Array.from({ length: 16 }, () => UPPER_ALNUM[randomInt(UPPER_ALNUM.length)]).join('');
}
function secretKey(): string {
  return randomBytes(30).toString('base64');
}

/** What the account holds. Methods named like IAM actions apply IAM's rules; tests call them to set up. */
export class IamState {
  readonly users = new Map<string, IamUser>();
  readonly groups = new Map<string, IamGroup>();
  readonly roles = new Map<string, IamRole>();
  readonly instanceProfiles = new Map<string, InstanceProfile>();
  /** Managed policies by ARN (AWS-managed ones under `arn:aws:iam::aws:policy/` are created on demand by tests). */
  readonly policies = new Set<string>();
  readonly accessKeys = new Map<string, AccessKey>();
  readonly sessions = new Map<string, StsSession>();
  /** Every action the emulator served or refused, in order: what the provider saw. */
  readonly calls: string[] = [];
  /** The same calls with when each came and the user it named, for tests that count calls per user over time. */
  readonly timedCalls: { action: string; userName?: string; at: number }[] = [];

  createUser(name: string, options: { path?: string; permissionsBoundary?: string } = {}): IamUser {
    if (!/^[\w+=,.@-]{1,64}$/.test(name)) throw new EmulatorError(400, 'ValidationError', `1 validation error detected: Value '${name}' at 'userName' failed to satisfy constraint: Member must have length less than or equal to 64 and match [\\w+=,.@-]+`);
    if (this.users.has(name)) throw new EmulatorError(409, 'EntityAlreadyExists', `User with name ${name} already exists.`);
    const path = options.path ?? '/';
    if (options.permissionsBoundary !== undefined) this.policy(options.permissionsBoundary);
    const user: IamUser = {
      name,
      id: identifier('AIDA'),
      arn: `arn:aws:iam::${ACCOUNT_ID}:user${path}${name}`,
      path,
      createDate: new Date(),
      permissionsBoundary: options.permissionsBoundary,
      tags: {},
      inlinePolicies: new Map(),
      attachedPolicies: new Set(),
      groups: new Set(),
      loginProfile: false,
    };
    this.users.set(name, user);
    return user;
  }

  user(name: string): IamUser {
    const user = this.users.get(name);
    if (!user) throw new EmulatorError(404, 'NoSuchEntity', `The user with name ${name} cannot be found.`);
    return user;
  }

  deleteUser(name: string): void {
    const user = this.user(name);
    const keys = this.keysOf(name).length;
    if (keys > 0 || user.inlinePolicies.size > 0 || user.attachedPolicies.size > 0 || user.groups.size > 0 || user.loginProfile) {
      throw new EmulatorError(409, 'DeleteConflict', 'Cannot delete entity, must remove access keys, policies, groups and login profile first.');
    }
    this.users.delete(name);
  }

  createAccessKey(userName: string): AccessKey {
    this.user(userName);
    if (this.keysOf(userName).length >= 2) throw new EmulatorError(409, 'LimitExceeded', 'Cannot exceed quota for AccessKeysPerUser: 2');
    const key: AccessKey = { id: identifier('AKIA'), secret: secretKey(), userName, createDate: new Date() };
    this.accessKeys.set(key.id, key);
    return key;
  }

  deleteAccessKey(userName: string, id: string): void {
    const key = this.accessKeys.get(id);
    if (!key || key.userName !== userName) throw new EmulatorError(404, 'NoSuchEntity', `The Access Key with id ${id} cannot be found.`);
    this.accessKeys.delete(id);
  }

  keysOf(userName: string): AccessKey[] {
    return [...this.accessKeys.values()].filter((key) => key.userName === userName);
  }

  createGroup(name: string): IamGroup {
    if (this.groups.has(name)) throw new EmulatorError(409, 'EntityAlreadyExists', `Group with name ${name} already exists.`);
    const group: IamGroup = { name, id: identifier('AGPA'), arn: `arn:aws:iam::${ACCOUNT_ID}:group/${name}`, createDate: new Date(), inlinePolicies: new Map(), attachedPolicies: new Set() };
    this.groups.set(name, group);
    return group;
  }

  group(name: string): IamGroup {
    const group = this.groups.get(name);
    if (!group) throw new EmulatorError(404, 'NoSuchEntity', `The group with name ${name} cannot be found.`);
    return group;
  }

  createRole(name: string, maxSessionDuration = 3600, path = '/'): IamRole {
    if (this.roles.has(name)) throw new EmulatorError(409, 'EntityAlreadyExists', `Role with name ${name} already exists.`);
    const role: IamRole = { name, id: identifier('AROA'), arn: `arn:aws:iam::${ACCOUNT_ID}:role${path}${name}`, path, maxSessionDuration };
    this.roles.set(name, role);
    return role;
  }

  createInstanceProfile(name: string, roleName: string): InstanceProfile {
    if (!this.roles.has(roleName)) throw new EmulatorError(404, 'NoSuchEntity', `The role with name ${roleName} cannot be found.`);
    const profile: InstanceProfile = { name, id: identifier('AIPA'), arn: `arn:aws:iam::${ACCOUNT_ID}:instance-profile/${name}`, roles: [roleName] };
    this.instanceProfiles.set(name, profile);
    return profile;
  }

  createPolicy(arn: string): string {
    this.policies.add(arn);
    return arn;
  }

  policy(arn: string): string {
    if (!this.policies.has(arn)) throw new EmulatorError(404, 'NoSuchEntity', `Policy ${arn} does not exist or is not attachable.`);
    return arn;
  }

  /** The secret signing requests as `accessKeyId`, if the key exists (long-term) or the session has not been dropped. */
  signingSecret(accessKeyId: string): SigningSecret | undefined {
    const key = this.accessKeys.get(accessKeyId);
    if (key) return { secretAccessKey: key.secret };
    const session = this.sessions.get(accessKeyId);
    return session && { secretAccessKey: session.secret, sessionToken: session.token, expiresAt: session.expiresAt };
  }

  issueSession(arn: string, userId: string, durationSeconds: number, filter: Pick<StsSession, 'policy' | 'policyArns'> = { policyArns: [] }): StsSession {
    const session: StsSession = {
      ...filter,
      id: identifier('ASIA'),
      secret: secretKey(),
      token: randomBytes(96).toString('base64'),
      expiresAt: new Date(Math.floor(Date.now() / 1000) * 1000 + durationSeconds * 1000),
      arn,
      userId,
    };
    this.sessions.set(session.id, session);
    return session;
  }
}

/** Form parameters of one request, with the query protocol's list encoding (`Name.member.N[.Field]`). */
class Params {
  constructor(private readonly form: URLSearchParams) {}

  optional(name: string): string | undefined {
    return this.form.get(name) ?? undefined;
  }

  required(name: string): string {
    const value = this.form.get(name);
    if (value === null || value === '') throw new EmulatorError(400, 'ValidationError', `1 validation error detected: Value null at '${name}' failed to satisfy constraint: Member must not be null`);
    return value;
  }

  int(name: string, fallback: number): number {
    const value = this.form.get(name);
    return value === null ? fallback : Number(value);
  }

  /** `Name.member.1.Field`, `Name.member.2.Field`, ... as records of their fields. */
  members(name: string): Array<Record<string, string>> {
    const found: Array<Record<string, string>> = [];
    for (const [key, value] of this.form) {
      const match = new RegExp(`^${name}\\.member\\.(\\d+)\\.(\\w+)$`).exec(key);
      if (match) (found[Number(match[1]) - 1] ??= {})[match[2]] = value;
    }
    return found.filter(Boolean);
  }
}

export type XmlValue = string | number | boolean | Date | undefined | XmlValue[] | { [name: string]: XmlValue };

export function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The query protocols' XML: lists as `<member>` elements (EC2: `<item>`), times as ISO 8601. */
export function toXml(name: string, value: XmlValue, listItem = 'member'): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) return `<${name}>${value.map((item) => toXml(listItem, item, listItem)).join('')}</${name}>`;
  if (value instanceof Date) return `<${name}>${value.toISOString()}</${name}>`;
  if (typeof value === 'object') return `<${name}>${Object.entries(value).map(([key, item]) => toXml(key, item, listItem)).join('')}</${name}>`;
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

function checkPolicyDocument(document: string): void {
  try {
    const parsed = JSON.parse(document) as unknown;
    if (typeof parsed !== 'object' || parsed === null) throw new Error('not an object');
  } catch {
    throw new EmulatorError(400, 'MalformedPolicyDocument', 'Syntax errors in policy.');
  }
}

function userXml(user: IamUser): XmlValue {
  return { Path: user.path, UserName: user.name, UserId: user.id, Arn: user.arn, CreateDate: user.createDate, PermissionsBoundary: user.permissionsBoundary && { PermissionsBoundaryType: 'Policy', PermissionsBoundaryArn: user.permissionsBoundary } };
}

function attachedXml(arns: Iterable<string>): XmlValue {
  return [...arns].map((arn) => ({ PolicyName: arn.slice(arn.lastIndexOf('/') + 1), PolicyArn: arn }));
}

function credentialsXml(session: StsSession): XmlValue {
  return { AccessKeyId: session.id, SecretAccessKey: session.secret, SessionToken: session.token, Expiration: session.expiresAt };
}

interface Caller {
  accessKeyId: string;
  /** The IAM user of long-term keys; absent for session credentials. */
  userName?: string;
  session?: StsSession;
}

type Action = (params: Params, caller: Caller) => XmlValue;

function iamActions(state: IamState): Record<string, Action> {
  const userOf = (params: Params, caller: Caller): IamUser => {
    const name = params.optional('UserName') ?? caller.userName;
    if (!name) throw new EmulatorError(400, 'ValidationError', 'Must specify userName when calling with non-User credentials');
    return state.user(name);
  };
  return {
    CreateUser: (p) => {
      const user = state.createUser(p.required('UserName'), { path: p.optional('Path'), permissionsBoundary: p.optional('PermissionsBoundary') });
      for (const tag of p.members('Tags')) user.tags[tag.Key] = tag.Value;
      return { User: userXml(user) };
    },
    GetUser: (p, c) => ({ User: userXml(userOf(p, c)) }),
    DeleteUser: (p) => {
      state.deleteUser(p.required('UserName'));
      return undefined;
    },
    TagUser: (p) => {
      const user = state.user(p.required('UserName'));
      for (const tag of p.members('Tags')) user.tags[tag.Key] = tag.Value;
      return undefined;
    },
    CreateAccessKey: (p, c) => {
      const key = state.createAccessKey(userOf(p, c).name);
      return { AccessKey: { UserName: key.userName, AccessKeyId: key.id, Status: 'Active', SecretAccessKey: key.secret, CreateDate: key.createDate } };
    },
    DeleteAccessKey: (p, c) => {
      state.deleteAccessKey(userOf(p, c).name, p.required('AccessKeyId'));
      return undefined;
    },
    ListAccessKeys: (p, c) => ({
      AccessKeyMetadata: state.keysOf(userOf(p, c).name).map((key) => ({ UserName: key.userName, AccessKeyId: key.id, Status: 'Active', CreateDate: key.createDate })),
      IsTruncated: false,
    }),
    AttachUserPolicy: (p) => {
      state.user(p.required('UserName')).attachedPolicies.add(state.policy(p.required('PolicyArn')));
      return undefined;
    },
    DetachUserPolicy: (p) => {
      const arn = p.required('PolicyArn');
      if (!state.user(p.required('UserName')).attachedPolicies.delete(arn)) throw new EmulatorError(404, 'NoSuchEntity', `Policy ${arn} was not found.`);
      return undefined;
    },
    ListAttachedUserPolicies: (p) => ({ AttachedPolicies: attachedXml(state.user(p.required('UserName')).attachedPolicies), IsTruncated: false }),
    PutUserPolicy: (p) => {
      const document = p.required('PolicyDocument');
      checkPolicyDocument(document);
      state.user(p.required('UserName')).inlinePolicies.set(p.required('PolicyName'), document);
      return undefined;
    },
    DeleteUserPolicy: (p) => {
      const name = p.required('PolicyName');
      if (!state.user(p.required('UserName')).inlinePolicies.delete(name)) throw new EmulatorError(404, 'NoSuchEntity', `The user policy with name ${name} cannot be found.`);
      return undefined;
    },
    ListUserPolicies: (p) => ({ PolicyNames: [...state.user(p.required('UserName')).inlinePolicies.keys()], IsTruncated: false }),
    AddUserToGroup: (p) => {
      const group = state.group(p.required('GroupName'));
      state.user(p.required('UserName')).groups.add(group.name);
      return undefined;
    },
    RemoveUserFromGroup: (p) => {
      const name = p.required('GroupName');
      if (!state.user(p.required('UserName')).groups.delete(name)) throw new EmulatorError(404, 'NoSuchEntity', `The user is not in group ${name}.`);
      return undefined;
    },
    ListGroupsForUser: (p) => ({
      Groups: [...state.user(p.required('UserName')).groups].map((name) => {
        const group = state.group(name);
        return { Path: '/', GroupName: group.name, GroupId: group.id, Arn: group.arn, CreateDate: group.createDate };
      }),
      IsTruncated: false,
    }),
    CreateLoginProfile: (p) => {
      const user = state.user(p.required('UserName'));
      user.loginProfile = true;
      return { LoginProfile: { UserName: user.name, CreateDate: new Date(), PasswordResetRequired: false } };
    },
    GetLoginProfile: (p) => {
      const user = state.user(p.required('UserName'));
      if (!user.loginProfile) throw new EmulatorError(404, 'NoSuchEntity', `Login Profile for User ${user.name} cannot be found.`);
      return { LoginProfile: { UserName: user.name, CreateDate: user.createDate, PasswordResetRequired: false } };
    },
    DeleteLoginProfile: (p) => {
      const user = state.user(p.required('UserName'));
      if (!user.loginProfile) throw new EmulatorError(404, 'NoSuchEntity', `Login Profile for User ${user.name} cannot be found.`);
      user.loginProfile = false;
      return undefined;
    },
    CreateGroup: (p) => {
      const group = state.createGroup(p.required('GroupName'));
      return { Group: { Path: '/', GroupName: group.name, GroupId: group.id, Arn: group.arn, CreateDate: group.createDate } };
    },
    PutGroupPolicy: (p) => {
      const document = p.required('PolicyDocument');
      checkPolicyDocument(document);
      state.group(p.required('GroupName')).inlinePolicies.set(p.required('PolicyName'), document);
      return undefined;
    },
    AttachGroupPolicy: (p) => {
      state.group(p.required('GroupName')).attachedPolicies.add(state.policy(p.required('PolicyArn')));
      return undefined;
    },
    ListAttachedGroupPolicies: (p) => ({ AttachedPolicies: attachedXml(state.group(p.required('GroupName')).attachedPolicies), IsTruncated: false }),
    ListGroupPolicies: (p) => ({ PolicyNames: [...state.group(p.required('GroupName')).inlinePolicies.keys()], IsTruncated: false }),
    GetGroupPolicy: (p) => {
      const group = state.group(p.required('GroupName'));
      const name = p.required('PolicyName');
      const document = group.inlinePolicies.get(name);
      if (document === undefined) throw new EmulatorError(404, 'NoSuchEntity', `The group policy with name ${name} cannot be found.`);
      // IAM answers policy documents URL-encoded.
      return { GroupName: group.name, PolicyName: name, PolicyDocument: encodeURIComponent(document) };
    },
    CreatePolicy: (p) => {
      const name = p.required('PolicyName');
      checkPolicyDocument(p.required('PolicyDocument'));
      const arn = state.createPolicy(`arn:aws:iam::${ACCOUNT_ID}:policy${p.optional('Path') ?? '/'}${name}`);
      return { Policy: { PolicyName: name, PolicyId: identifier('ANPA'), Arn: arn, Path: p.optional('Path') ?? '/', DefaultVersionId: 'v1', AttachmentCount: 0, IsAttachable: true, CreateDate: new Date() } };
    },
    CreateRole: (p) => {
      const role = state.createRole(p.required('RoleName'), p.int('MaxSessionDuration', 3600), p.optional('Path'));
      return { Role: { Path: role.path, RoleName: role.name, RoleId: role.id, Arn: role.arn, CreateDate: new Date(), MaxSessionDuration: role.maxSessionDuration } };
    },
    GetInstanceProfile: (p) => {
      const name = p.required('InstanceProfileName');
      const profile = state.instanceProfiles.get(name);
      if (!profile) throw new EmulatorError(404, 'NoSuchEntity', `Instance Profile ${name} cannot be found.`);
      const roles = profile.roles.map((roleName) => {
        const role = state.roles.get(roleName)!;
        return { Path: role.path, RoleName: role.name, RoleId: role.id, Arn: role.arn, CreateDate: new Date() };
      });
      return { InstanceProfile: { Path: '/', InstanceProfileName: profile.name, InstanceProfileId: profile.id, Arn: profile.arn, CreateDate: new Date(), Roles: roles } };
    },
    GetRole: (p) => {
      const name = p.required('RoleName');
      const role = state.roles.get(name);
      if (!role) throw new EmulatorError(404, 'NoSuchEntity', `The role with name ${name} cannot be found.`);
      return { Role: { Path: role.path, RoleName: role.name, RoleId: role.id, Arn: role.arn, CreateDate: new Date(), MaxSessionDuration: role.maxSessionDuration } };
    },
  };
}

function checkDuration(seconds: number, max: number): void {
  if (!Number.isInteger(seconds) || seconds < 900 || seconds > max) {
    throw new EmulatorError(400, 'ValidationError', `The requested DurationSeconds exceeds the MaxSessionDuration set for this role (900 to ${max} seconds).`);
  }
}

function sessionPolicy(params: Params): Pick<StsSession, 'policy' | 'policyArns'> {
  const policy = params.optional('Policy');
  if (policy !== undefined) checkPolicyDocument(policy);
  const policyArns = params.members('PolicyArns').map((member) => member.arn);
  for (const arn of policyArns) if (!arn?.startsWith('arn:')) throw new EmulatorError(400, 'ValidationError', `Invalid policy ARN ${arn}`);
  return { policy, policyArns };
}

function stsActions(state: IamState): Record<string, Action> {
  return {
    GetCallerIdentity: (_p, c) => {
      if (c.session) return { Arn: c.session.arn, UserId: c.session.userId, Account: ACCOUNT_ID };
      const user = state.user(c.userName!);
      return { Arn: user.arn, UserId: user.id, Account: ACCOUNT_ID };
    },
    AssumeRole: (p) => {
      const roleArn = p.required('RoleArn');
      const sessionName = p.required('RoleSessionName');
      if (!/^[\w+=,.@-]{2,64}$/.test(sessionName)) throw new EmulatorError(400, 'ValidationError', `Value '${sessionName}' at 'roleSessionName' failed to satisfy constraint`);
      const role = [...state.roles.values()].find((r) => r.arn === roleArn);
      if (!role) throw new EmulatorError(403, 'AccessDenied', `Not authorized to perform sts:AssumeRole on resource ${roleArn}`);
      const duration = p.int('DurationSeconds', 3600);
      checkDuration(duration, role.maxSessionDuration);
      // A role of another account (a test's cross-account role) gives sessions in that account.
      const arn = `arn:aws:sts::${role.arn.split(':')[4]}:assumed-role/${role.name}/${sessionName}`;
      const session = state.issueSession(arn, `${role.id}:${sessionName}`, duration, sessionPolicy(p));
      return { Credentials: credentialsXml(session), AssumedRoleUser: { AssumedRoleId: session.userId, Arn: arn }, PackedPolicySize: 6 };
    },
    GetFederationToken: (p, c) => {
      if (!c.userName) throw new EmulatorError(403, 'AccessDenied', 'Cannot call GetFederationToken with session credentials');
      const name = p.required('Name');
      if (!/^[\w+=,.@-]{2,32}$/.test(name)) throw new EmulatorError(400, 'ValidationError', `Value '${name}' at 'name' failed to satisfy constraint: Member must have length less than or equal to 32`);
      const duration = p.int('DurationSeconds', 43200);
      checkDuration(duration, 129600);
      const arn = `arn:aws:sts::${ACCOUNT_ID}:federated-user/${name}`;
      const session = state.issueSession(arn, `${ACCOUNT_ID}:${name}`, duration, sessionPolicy(p));
      return { Credentials: credentialsXml(session), FederatedUser: { FederatedUserId: session.userId, Arn: arn }, PackedPolicySize: 6 };
    },
    GetSessionToken: (p, c) => {
      if (!c.userName) throw new EmulatorError(403, 'AccessDenied', 'Cannot call GetSessionToken with session credentials');
      const duration = p.int('DurationSeconds', 43200);
      checkDuration(duration, 129600);
      const user = state.user(c.userName);
      return { Credentials: credentialsXml(state.issueSession(user.arn, user.id, duration)) };
    },
  };
}

export interface IamStsEmulator {
  url: string;
  /** The region STS signatures must be scoped to. */
  region: string;
  state: IamState;
  /** The next `times` calls of `action` fail with this provider error (status 5xx: a server fault). */
  failNext(action: string, fault: ProviderFault, times?: number): void;
  /** Shifts the emulator's clock (to prove signatures signed too far from it are refused). */
  clockOffsetMs: number;
  close(): Promise<void>;
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const NAMESPACES: Record<string, string> = { iam: 'https://iam.amazonaws.com/doc/2010-05-08/', sts: 'https://sts.amazonaws.com/doc/2011-06-15/' };

/**
 * Starts the emulator on a free port of 127.0.0.1. `recordCalls: false` keeps `state.calls` empty
 * (a benchmark's hundreds of thousands of calls would only grow the heap). Another region's
 * endpoint of the same account is another emulator given the first one's `state`.
 */
export async function startIamStsEmulator(options: { region?: string; recordCalls?: boolean; state?: IamState } = {}): Promise<IamStsEmulator> {
  const region = options.region ?? 'us-east-1';
  const recordCalls = options.recordCalls ?? true;
  const state = options.state ?? new IamState();
  const actions: Record<string, Record<string, Action>> = { iam: iamActions(state), sts: stsActions(state) };
  const faults = new Map<string, { fault: ProviderFault; times: number }>();

  const reply = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID(), date: new Date(Date.now() + emulator.clockOffsetMs).toUTCString() });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
  };
  const fail = (res: ServerResponse, err: EmulatorError) =>
    reply(res, err.status, toXml('ErrorResponse', { Error: { Type: err.status >= 500 ? 'Receiver' : 'Sender', Code: err.code, Message: err.message }, RequestId: randomUUID() }));

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    // The query protocol sends its parameters in the form body; a presigned GET sends them in the query.
    const form = new URLSearchParams(body.toString('utf8'));
    for (const [key, value] of new URL(req.url ?? '/', 'http://emulator').searchParams) if (!key.startsWith('X-Amz-')) form.append(key, value);
    const action = form.get('Action') ?? '';
    if (recordCalls) {
      state.calls.push(action);
      state.timedCalls.push({ action, userName: form.get('UserName') ?? undefined, at: Date.now() });
    }
    const verified = await verifySigV4({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body }, (id) => state.signingSecret(id), new Date(Date.now() + emulator.clockOffsetMs));
    if (!verified.ok) return fail(res, new EmulatorError(verified.status, verified.code, verified.message));
    const service = verified.service;
    if (service === 'sts' && verified.region !== region) {
      return fail(res, new EmulatorError(403, 'SignatureDoesNotMatch', `Credential should be scoped to a valid region, not '${verified.region}'.`));
    }
    const handler = actions[service]?.[action];
    if (!handler) return fail(res, new EmulatorError(400, 'InvalidAction', `Could not find operation ${action} for version ${form.get('Version') ?? ''}`));
    const injected = faults.get(action);
    if (injected) {
      if (--injected.times <= 0) faults.delete(action);
      return fail(res, new EmulatorError(injected.fault.status, injected.fault.code, injected.fault.message));
    }
    const key = state.accessKeys.get(verified.accessKeyId);
    const caller: Caller = { accessKeyId: verified.accessKeyId, userName: key?.userName, session: state.sessions.get(verified.accessKeyId) };
    try {
      const result = handler(new Params(form), caller);
      const inner = result === undefined ? '' : toXml(`${action}Result`, result);
      reply(res, 200, `<${action}Response xmlns="${NAMESPACES[service]}">${inner}${toXml('ResponseMetadata', { RequestId: randomUUID() })}</${action}Response>`);
    } catch (err) {
      if (!(err instanceof EmulatorError)) throw err;
      fail(res, err);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => fail(res, new EmulatorError(500, 'InternalFailure', 'internal failure')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const emulator: IamStsEmulator = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region,
    state,
    clockOffsetMs: 0,
    failNext: (action, fault, times = 1) => faults.set(action, { fault, times }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return emulator;
}

/** Whom the emulator takes these credentials for (their ARN), or the error it refuses them with: proof that they work. */
export async function callerOf(emulator: IamStsEmulator, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }): Promise<string> {
  const sts = new STSClient({ endpoint: emulator.url, region: emulator.region, maxAttempts: 1, credentials });
  try {
    return (await sts.send(new GetCallerIdentityCommand({}))).Arn ?? '';
  } catch (err) {
    return (err as Error).name;
  } finally {
    sts.destroy();
  }
}
