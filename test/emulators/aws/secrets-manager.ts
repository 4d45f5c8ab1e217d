/**
 * A Secrets Manager emulator speaking the awsJson1_1 protocol (`X-Amz-Target:
 * secretsmanager.<Action>`, JSON bodies, errors as `{__type, message}`), every request checked
 * with SigV4 against the access keys it was given. It keeps what Secrets Manager keeps: secrets by
 * name with tags, versions, and deletion (with a recovery window, a deleted name stays taken).
 */
import { randomUUID } from 'node:crypto';
import type { SigningSecret } from './sigv4';
import { AwsJsonError as AwsError, awsJsonHandler } from './aws-json';
import { FaultInjector, listenLocally } from '../http-server';

export interface StoredSecret {
  name: string;
  arn: string;
  tags: Record<string, string>;
  /** Version values, oldest first; the last is AWSCURRENT. */
  versions: string[];
  /** Set while the secret is scheduled for deletion. */
  deletedAt?: Date;
}

export interface SecretsManagerEmulator {
  url: string;
  region: string;
  secrets: Map<string, StoredSecret>;
  /** Access keys the emulator accepts. */
  accessKeys: Map<string, SigningSecret>;
  /** Every action served or refused, in order. */
  calls: string[];
  /** The next `times` calls of `action` answer this error (`{__type, message}` with the status). */
  failNext(action: string, fault: { status: number; type: string; message: string }, times?: number): void;
  /** The current value of a live secret. */
  value(name: string): string | undefined;
  close(): Promise<void>;
}

/** `onValue` hears every value the emulator stores, as it stores it (the sync lag bench times arrivals). */
export async function startSecretsManagerEmulator(options: { region?: string; onValue?: (name: string, value: string) => void } = {}): Promise<SecretsManagerEmulator> {
  const region = options.region ?? 'us-east-1';
  const secrets = new Map<string, StoredSecret>();
  const accessKeys = new Map<string, SigningSecret>();
  const calls: string[] = [];
  const faults = new FaultInjector();

  const live = (id: string): StoredSecret => {
    const secret = secrets.get(id) ?? [...secrets.values()].find((candidate) => candidate.arn === id);
    if (!secret) throw new AwsError(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return secret;
  };
  const notDeleted = (secret: StoredSecret) => {
    if (secret.deletedAt) throw new AwsError(400, 'InvalidRequestException', "You can't perform this operation on the secret because it was marked for deletion.");
    return secret;
  };
  const answer = (secret: StoredSecret) => ({ ARN: secret.arn, Name: secret.name, VersionId: randomUUID() });

  const actions: Record<string, (body: Record<string, unknown>) => unknown> = {
    CreateSecret: (body) => {
      const name = String(body.Name ?? '');
      if (!/^[A-Za-z0-9/_+=.@-]{1,512}$/.test(name)) throw new AwsError(400, 'ValidationException', `Invalid name ${name}`);
      const existing = secrets.get(name);
      if (existing?.deletedAt) throw new AwsError(400, 'InvalidRequestException', `You can't create this secret because a secret with this name is already scheduled for deletion.`);
      if (existing) throw new AwsError(400, 'ResourceExistsException', `The operation failed because the secret ${name} already exists.`);
      const tags = Object.fromEntries(((body.Tags as { Key: string; Value: string }[] | undefined) ?? []).map((tag) => [tag.Key, tag.Value]));
      const secret: StoredSecret = { name, arn: `arn:aws:secretsmanager:${region}:123456789012:secret:${name}-${randomUUID().slice(0, 6)}`, tags, versions: [String(body.SecretString ?? '')] };
      secrets.set(name, secret);
      options.onValue?.(name, secret.versions[0]);
      return answer(secret);
    },
    PutSecretValue: (body) => {
      const secret = notDeleted(live(String(body.SecretId)));
      secret.versions.push(String(body.SecretString ?? ''));
      options.onValue?.(secret.name, secret.versions[secret.versions.length - 1]);
      return answer(secret);
    },
    GetSecretValue: (body) => {
      const secret = notDeleted(live(String(body.SecretId)));
      return { ...answer(secret), SecretString: secret.versions[secret.versions.length - 1] };
    },
    DescribeSecret: (body) => {
      const secret = live(String(body.SecretId));
      return { ARN: secret.arn, Name: secret.name, Tags: Object.entries(secret.tags).map(([Key, Value]) => ({ Key, Value })), DeletedDate: secret.deletedAt?.getTime() };
    },
    DeleteSecret: (body) => {
      const secret = live(String(body.SecretId));
      if (body.ForceDeleteWithoutRecovery === true) secrets.delete(secret.name);
      else secret.deletedAt = new Date();
      return { ARN: secret.arn, Name: secret.name, DeletionDate: Date.now() / 1000 };
    },
  };

  const server = await listenLocally(
    awsJsonHandler({ service: 'secretsmanager', targetPrefix: 'secretsmanager', region, credentials: (id) => accessKeys.get(id), actions, calls, intercept: (action) => faults.take(action) }),
  );

  return {
    url: server.url,
    region,
    secrets,
    accessKeys,
    calls,
    failNext: (action, fault, times) => faults.failNext(action, { status: fault.status, body: { __type: fault.type, message: fault.message } }, times),
    value: (name) => {
      const secret = secrets.get(name);
      return secret && !secret.deletedAt ? secret.versions[secret.versions.length - 1] : undefined;
    },
    close: server.close,
  };
}
