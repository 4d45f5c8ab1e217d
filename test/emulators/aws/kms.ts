/**
 * An AWS KMS emulator at the wire level: awsJson1_1 (`POST /`, `X-Amz-Target: TrentService.<Action>`,
 * JSON bodies, errors `{"__type": ..., "message": ...}`), every request's SigV4 signature checked
 * (`sigv4.ts`) for the `kms` service in the emulator's region. Symmetric keys really encrypt: AES-256-GCM
 * under per-key material, one material per rotation; the ciphertext blob names its key and material,
 * so Decrypt needs no key id and old ciphertexts decrypt after a rotation, as in KMS.
 *
 * `state` is what KMS holds (tests create keys and credentials there); `outage` takes the service
 * down (connections refused, or every call a 500) until `restore`.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SigningSecret } from './sigv4';
import { AwsJsonError, awsJsonHandler } from './aws-json';
import { sendJson } from '../http-server';
import { ACCOUNT_ID } from './iam-sts';

type KeyState = 'Enabled' | 'Disabled';

export interface KmsKey {
  id: string;
  arn: string;
  description: string;
  state: KeyState;
  createdAt: Date;
  /** Key material, oldest first; the last encrypts, every one decrypts what it encrypted. */
  materials: Buffer[];
}

const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const UUID_CHARS = 36;
/** KMS encrypts at most 4 KiB of plaintext. */
const MAX_PLAINTEXT = 4096;

/** What the account's KMS holds. */
export class KmsState {
  readonly keys = new Map<string, KmsKey>();
  /** `alias/name` → key id. */
  readonly aliases = new Map<string, string>();
  readonly credentials = new Map<string, SigningSecret>();
  /** Every action served or refused, in order: what the provider saw. */
  readonly calls: string[] = [];

  constructor(private readonly region: string) {}

  /** Long-term credentials KMS accepts. */
  createCredentials(): { accessKeyId: string; secretAccessKey: string } {
    const accessKeyId = `AKIA${randomBytes(8).toString('hex').toUpperCase()}`;
    const secretAccessKey = randomBytes(30).toString('base64');
    this.credentials.set(accessKeyId, { secretAccessKey });
    return { accessKeyId, secretAccessKey };
  }

  createKey(description = ''): KmsKey {
    const id = randomUUID();
    const key: KmsKey = { id, arn: `arn:aws:kms:${this.region}:${ACCOUNT_ID}:key/${id}`, description, state: 'Enabled', createdAt: new Date(), materials: [randomBytes(32)] };
    this.keys.set(id, key);
    return key;
  }

  createAlias(name: string, keyId: string): void {
    if (!/^alias\/[a-zA-Z0-9/_-]{1,250}$/.test(name) || name.startsWith('alias/aws/')) throw new AwsJsonError(400, 'ValidationException', `Alias must start with the prefix "alias/" and not "alias/aws/": ${name}`);
    if (this.aliases.has(name)) throw new AwsJsonError(400, 'AlreadyExistsException', `An alias with the name ${this.aliasArn(name)} already exists`);
    this.aliases.set(name, this.key(keyId).id);
  }

  /** New key material for new encryptions; the old stays for decryption (RotateKeyOnDemand). */
  rotate(keyId: string): void {
    this.usableKey(keyId).materials.push(randomBytes(32));
  }

  setState(keyId: string, state: KeyState): void {
    this.key(keyId).state = state;
  }

  /** Resolves a key id, key ARN, alias name or alias ARN as KMS does. */
  key(reference: string): KmsKey {
    const aliasName = reference.startsWith('alias/') ? reference : /^arn:aws:kms:[^:]+:\d+:(alias\/.+)$/.exec(reference)?.[1];
    if (aliasName !== undefined) {
      const target = this.aliases.get(aliasName);
      if (!target) throw new AwsJsonError(400, 'NotFoundException', `Alias ${this.aliasArn(aliasName)} is not found.`);
      return this.keys.get(target) as KmsKey;
    }
    const id = /^arn:aws:kms:[^:]+:\d+:key\/(.+)$/.exec(reference)?.[1] ?? reference;
    const key = this.keys.get(id);
    if (!key) throw new AwsJsonError(400, 'NotFoundException', `Key '${this.keyArn(id)}' does not exist`);
    return key;
  }

  encrypt(reference: string, plaintext: Buffer, context: Record<string, string>): { key: KmsKey; blob: Buffer } {
    if (plaintext.length < 1 || plaintext.length > MAX_PLAINTEXT) {
      throw new AwsJsonError(400, 'ValidationException', `1 validation error detected: Value at 'plaintext' failed to satisfy constraint: Member must have length between 1 and ${MAX_PLAINTEXT}`);
    }
    const key = this.usableKey(reference);
    const version = key.materials.length - 1;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.materials[version], iv);
    cipher.setAAD(contextAad(context));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const header = Buffer.alloc(5);
    header.writeUInt8(BLOB_VERSION, 0);
    header.writeUInt32BE(version, 1);
    return { key, blob: Buffer.concat([header, Buffer.from(key.id, 'ascii'), iv, body, cipher.getAuthTag()]) };
  }

  /** The key the blob names must match `reference` when one is given (IncorrectKeyException otherwise). */
  decrypt(blob: Buffer, context: Record<string, string>, reference?: string): { key: KmsKey; plaintext: Buffer } {
    const invalid = new AwsJsonError(400, 'InvalidCiphertextException', '');
    const headerBytes = 5 + UUID_CHARS;
    if (blob.length < headerBytes + IV_BYTES + TAG_BYTES || blob.readUInt8(0) !== BLOB_VERSION) throw invalid;
    const key = this.keys.get(blob.subarray(5, headerBytes).toString('ascii'));
    if (!key) throw invalid;
    if (reference !== undefined && this.key(reference).id !== key.id) {
      throw new AwsJsonError(400, 'IncorrectKeyException', 'The key ID in the request does not identify a CMK that can perform this operation.');
    }
    this.usableKey(key.id);
    const material = key.materials[blob.readUInt32BE(1)];
    if (!material) throw invalid;
    try {
      const decipher = createDecipheriv('aes-256-gcm', material, blob.subarray(headerBytes, headerBytes + IV_BYTES));
      decipher.setAAD(contextAad(context));
      decipher.setAuthTag(blob.subarray(blob.length - TAG_BYTES));
      return { key, plaintext: Buffer.concat([decipher.update(blob.subarray(headerBytes + IV_BYTES, blob.length - TAG_BYTES)), decipher.final()]) };
    } catch {
      throw invalid;
    }
  }

  private usableKey(reference: string): KmsKey {
    const key = this.key(reference);
    if (key.state === 'Disabled') throw new AwsJsonError(400, 'DisabledException', `${key.arn} is disabled.`);
    return key;
  }

  private keyArn(id: string): string {
    return `arn:aws:kms:${this.region}:${ACCOUNT_ID}:key/${id}`;
  }

  private aliasArn(name: string): string {
    return `arn:aws:kms:${this.region}:${ACCOUNT_ID}:${name}`;
  }
}

/** The encryption context is authenticated data: sorted, so key order does not matter (as in KMS). */
function contextAad(context: Record<string, string>): Buffer {
  return Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => a.localeCompare(b))), 'utf8');
}

interface Request {
  text(field: string): string | undefined;
  required(field: string): string;
  blob(field: string): Buffer;
  context(): Record<string, string>;
}

type Action = (request: Request) => Record<string, unknown>;

function keyMetadata(key: KmsKey): Record<string, unknown> {
  return {
    AWSAccountId: ACCOUNT_ID,
    KeyId: key.id,
    Arn: key.arn,
    CreationDate: key.createdAt.getTime() / 1000,
    Enabled: key.state === 'Enabled',
    Description: key.description,
    KeyUsage: 'ENCRYPT_DECRYPT',
    KeyState: key.state,
    Origin: 'AWS_KMS',
    KeyManager: 'CUSTOMER',
    KeySpec: 'SYMMETRIC_DEFAULT',
    CustomerMasterKeySpec: 'SYMMETRIC_DEFAULT',
    EncryptionAlgorithms: ['SYMMETRIC_DEFAULT'],
    MultiRegion: false,
  };
}

function actions(state: KmsState): Record<string, Action> {
  return {
    CreateKey: (r) => ({ KeyMetadata: keyMetadata(state.createKey(r.text('Description'))) }),
    DescribeKey: (r) => ({ KeyMetadata: keyMetadata(state.key(r.required('KeyId'))) }),
    EnableKey: (r) => (state.setState(r.required('KeyId'), 'Enabled'), {}),
    DisableKey: (r) => (state.setState(r.required('KeyId'), 'Disabled'), {}),
    CreateAlias: (r) => (state.createAlias(r.required('AliasName'), r.required('TargetKeyId')), {}),
    RotateKeyOnDemand: (r) => {
      const key = state.key(r.required('KeyId'));
      state.rotate(key.id);
      return { KeyId: key.id };
    },
    Encrypt: (r) => {
      const { key, blob } = state.encrypt(r.required('KeyId'), r.blob('Plaintext'), r.context());
      return { CiphertextBlob: blob.toString('base64'), KeyId: key.arn, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
    Decrypt: (r) => {
      const { key, plaintext } = state.decrypt(r.blob('CiphertextBlob'), r.context(), r.text('KeyId'));
      return { Plaintext: plaintext.toString('base64'), KeyId: key.arn, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
  };
}

function parseRequest(fields: Record<string, unknown>): Request {
  const text = (field: string) => {
    const value = fields[field];
    if (value !== undefined && typeof value !== 'string') throw new AwsJsonError(400, 'SerializationException', `STRING_VALUE can not be converted to ${field}`);
    return value;
  };
  const required = (field: string) => {
    const value = text(field);
    if (!value) throw new AwsJsonError(400, 'ValidationException', `1 validation error detected: Value null at '${field[0].toLowerCase()}${field.slice(1)}' failed to satisfy constraint: Member must not be null`);
    return value;
  };
  return {
    text,
    required,
    blob: (field) => Buffer.from(required(field), 'base64'),
    context: () => {
      const context = fields.EncryptionContext ?? {};
      if (typeof context !== 'object' || context === null || Object.values(context).some((value) => typeof value !== 'string')) {
        throw new AwsJsonError(400, 'SerializationException', 'EncryptionContext must be a map of strings');
      }
      return context as Record<string, string>;
    },
  };
}

export type KmsOutage = 'refuse-connections' | 'internal-error' | 'silent';

export interface KmsEmulator {
  url: string;
  region: string;
  state: KmsState;
  /** Takes KMS down: connections refused (the port closed), every call answered 500 KMSInternalException, or every call read and never answered. */
  outage(kind: KmsOutage): Promise<void>;
  /** Brings KMS back on the same address. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Starts the emulator on a free port of 127.0.0.1. */
export async function startKmsEmulator(options: { region?: string } = {}): Promise<KmsEmulator> {
  const region = options.region ?? 'us-east-1';
  const state = new KmsState(region);
  const handlers = actions(state);
  let failing = false;
  let silent = false;

  const handle = awsJsonHandler({
    service: 'kms',
    targetPrefix: 'TrentService',
    region,
    credentials: (id) => state.credentials.get(id),
    actions: Object.fromEntries(Object.entries(handlers).map(([name, action]) => [name, (body) => action(parseRequest(body))])),
    calls: state.calls,
    intercept: () => (failing ? { status: 500, body: { __type: 'KMSInternalException', message: 'The request was rejected because an internal exception occurred. The request can be retried.' } } : undefined),
  });

  const server = createServer((req, res) => {
    if (silent) return;
    handle(req, res).catch(() => sendJson(res, 500, { __type: 'KMSInternalException', message: 'internal failure' }));
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  let refusing = false;
  return {
    url: `http://127.0.0.1:${port}`,
    region,
    state,
    outage: async (kind) => {
      if (kind !== 'refuse-connections') {
        failing = kind === 'internal-error';
        silent = kind === 'silent';
        return;
      }
      refusing = true;
      await stop();
    },
    restore: async () => {
      failing = false;
      silent = false;
      if (refusing) await listen(port);
      refusing = false;
    },
    close: () => (refusing ? Promise.resolve() : stop()),
  };
}
