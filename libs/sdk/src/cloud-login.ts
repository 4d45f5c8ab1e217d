/**
 * The login data of the cloud auth method's iam flow (Vault's GenerateLoginData): an
 * sts:GetCallerIdentity request signed with the caller's provider credentials, which the server
 * forwards to STS to learn who signed it. Nothing is sent to STS here.
 */
import { createHash, createHmac, type BinaryLike, type Hash, type Hmac } from 'node:crypto';

export interface CloudCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface CloudIamLoginOptions {
  credentials: CloudCredentials;
  /** The STS region to sign for; its regional endpoint is the URL signed (us-east-1: the global one). */
  region?: string;
  /** Sent and signed as X-Service-Cloud-IAM-Server-ID (the server's iam_server_id_header_value). */
  serverId?: string;
  /** For tests of the server's skew check: when the request claims to be signed. */
  signingDate?: Date;
}

/** The login fields, as `auth/cloud/login` takes them. */
export interface CloudIamLoginData {
  iam_http_request_method: 'POST';
  iam_request_url: string;
  iam_request_body: string;
  iam_request_headers: string;
}

const BODY = 'Action=GetCallerIdentity&Version=2011-06-15';

type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytes(data: SourceData): BinaryLike {
  if (typeof data === 'string') return data;
  return data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** SHA-256 in the shape SignatureV4 takes (`new Sha256(secret?)`, `update`, async `digest`), over node:crypto. */
export class NodeSha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.start();
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
  reset(): void {
    this.hash = this.start();
  }
  private start(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
}

/** The STS endpoint host of a region: the global endpoint for us-east-1, as the provider's CLI signs by default. */
export function stsHost(region: string): string {
  return region === 'us-east-1' ? 'sts.amazonaws.com' : `sts.${region}.amazonaws.com`;
}

export async function cloudIamLoginData(options: CloudIamLoginOptions): Promise<CloudIamLoginData> {
  const region = options.region || 'us-east-1';
  const host = stsHost(region);
  const headers: Record<string, string> = { host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' };
  if (options.serverId) headers['x-service-cloud-iam-server-id'] = options.serverId;
  // Loaded on first use: the signer is the SDK's only dependency, needed by this login alone.
  const { SignatureV4 } = await import('@smithy/signature-v4');
  const signer = new SignatureV4({ service: 'sts', region, credentials: options.credentials, sha256: NodeSha256, applyChecksum: false });
  const signed = await signer.sign({ method: 'POST', protocol: 'https:', hostname: host, path: '/', headers, body: BODY }, { signingDate: options.signingDate });
  const asLists = Object.fromEntries(Object.entries(signed.headers).map(([name, value]) => [name, [String(value)]]));
  return {
    iam_http_request_method: 'POST',
    iam_request_url: Buffer.from(`https://${host}/`).toString('base64'),
    iam_request_body: Buffer.from(BODY).toString('base64'),
    iam_request_headers: Buffer.from(JSON.stringify(asLists)).toString('base64'),
  };
}
