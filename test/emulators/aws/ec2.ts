/**
 * An EC2 emulator at the wire level, for the account of an IAM + STS emulator (its keys and STS
 * sessions sign the requests, SigV4 checked): DescribeInstances over the EC2 query protocol, and an
 * instance-metadata service per instance (`imdsUrl(id)`, IMDSv2 session token) serving its identity
 * document, the document's RSA-SHA256 signature, and PKCS#7 signatures of it (`pkcs7`, `rsa2048`)
 * made with pkijs by a test "provider" certificate, which tests register through config/certificate.
 */
import 'reflect-metadata';
import { createSign, randomBytes, randomUUID, webcrypto } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { X509CertificateGenerator } from '@peculiar/x509';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ACCOUNT_ID, readBody, toXml, type IamState, type XmlValue } from './iam-sts';
import { verifySigV4 } from './sigv4';

export interface Instance {
  id: string;
  imageId: string;
  region: string;
  accountId: string;
  vpcId: string;
  subnetId: string;
  /** `running`, `stopped`, ... */
  state: string;
  /** ARN of the instance profile, if any. */
  instanceProfileArn?: string;
  tags: Record<string, string>;
  /** When the instance last started: a stop and start moves it (a migration). */
  pendingTime: Date;
}

export interface Ec2Emulator {
  url: string;
  instances: Map<string, Instance>;
  /** The provider certificate (PEM) the identity documents are signed with. */
  certificatePem: string;
  launch(options?: Partial<Omit<Instance, 'id'>>): Instance;
  /** Base URL of the instance-metadata service of one instance. */
  imdsUrl(instanceId: string): string;
  /** The next `times` DescribeInstances fail with this status (a provider fault). */
  failNext(status: number, times?: number): void;
  close(): Promise<void>;
}

const crypto = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as webcrypto.Crypto });
pkijs.setEngine('node', crypto);

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };

function identityDocument(instance: Instance): string {
  return JSON.stringify(
    {
      accountId: instance.accountId,
      architecture: 'x86_64',
      availabilityZone: `${instance.region}a`,
      imageId: instance.imageId,
      instanceId: instance.id,
      instanceType: 't3.micro',
      pendingTime: instance.pendingTime.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      privateIp: '10.0.0.10',
      region: instance.region,
      version: '2017-09-30',
    },
    null,
    2,
  );
}

/** A detached-content-free PKCS#7 SignedData of `content`, one signer, signed attributes, no certificates (as the provider's). */
async function pkcs7(content: Buffer, certificate: pkijs.Certificate, key: webcrypto.CryptoKey): Promise<string> {
  const signed = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: pkijs.id_ContentType_Data, eContent: new asn1js.OctetString({ valueHex: content }) }),
    signerInfos: [
      new pkijs.SignerInfo({
        version: 1,
        sid: new pkijs.IssuerAndSerialNumber({ issuer: certificate.issuer, serialNumber: certificate.serialNumber }),
      }),
    ],
    certificates: [certificate],
  });
  const digest = await webcrypto.subtle.digest('SHA-256', content);
  signed.signerInfos[0].signedAttrs = new pkijs.SignedAndUnsignedAttributes({
    type: 0,
    attributes: [
      new pkijs.Attribute({ type: '1.2.840.113549.1.9.3', values: [new asn1js.ObjectIdentifier({ value: pkijs.id_ContentType_Data })] }),
      new pkijs.Attribute({ type: '1.2.840.113549.1.9.5', values: [new asn1js.UTCTime({ valueDate: new Date() })] }),
      new pkijs.Attribute({ type: '1.2.840.113549.1.9.4', values: [new asn1js.OctetString({ valueHex: digest })] }),
    ],
  });
  await signed.sign(key, 0, 'SHA-256');
  // The provider sends no certificates: the verifier has its own.
  signed.certificates = undefined;
  const info = new pkijs.ContentInfo({ contentType: pkijs.id_ContentType_SignedData, content: signed.toSchema(true) });
  return Buffer.from(info.toSchema().toBER()).toString('base64').replace(/(.{64})/g, '$1\n');
}

const STATE_CODES: Record<string, number> = { pending: 0, running: 16, 'shutting-down': 32, terminated: 48, stopping: 64, stopped: 80 };

function instanceXml(instance: Instance): XmlValue {
  return {
    instanceId: instance.id,
    imageId: instance.imageId,
    instanceState: { code: STATE_CODES[instance.state] ?? 16, name: instance.state },
    instanceType: 't3.micro',
    launchTime: instance.pendingTime,
    placement: { availabilityZone: `${instance.region}a` },
    subnetId: instance.subnetId,
    vpcId: instance.vpcId,
    iamInstanceProfile: instance.instanceProfileArn ? { arn: instance.instanceProfileArn, id: 'AIPA' + instance.id.slice(2).toUpperCase() } : undefined,
    tagSet: Object.entries(instance.tags).map(([key, value]) => ({ key, value })),
  };
}

export async function startEc2Emulator(iam: IamState, options: { region?: string } = {}): Promise<Ec2Emulator> {
  const region = options.region ?? 'us-east-1';
  const keys = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: 'CN=Test Cloud Provider Identity',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: RSA,
  });
  const certificate = pkijs.Certificate.fromBER(cert.rawData);
  const privatePem = `-----BEGIN PRIVATE KEY-----\n${Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64')}\n-----END PRIVATE KEY-----\n`;
  const instances = new Map<string, Instance>();
  const sessions = new Set<string>();
  let faults = { status: 0, times: 0 };

  const xml = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'text/xml;charset=UTF-8' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
  };
  const ec2Error = (res: ServerResponse, status: number, code: string, message: string) =>
    xml(res, status, `<Response><Errors><Error><Code>${code}</Code><Message>${message}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`);

  const imds = async (req: IncomingMessage, res: ServerResponse, instanceId: string, rest: string) => {
    const instance = instances.get(instanceId);
    if (!instance) return void res.writeHead(404).end();
    if (rest === 'latest/api/token' && req.method === 'PUT') {
      const token = randomBytes(24).toString('base64');
      sessions.add(token);
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end(token);
    }
    if (!sessions.has(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return void res.writeHead(401).end();
    const document = identityDocument(instance);
    const documents: Record<string, () => Promise<string> | string> = {
      'latest/dynamic/instance-identity/document': () => document,
      'latest/dynamic/instance-identity/signature': () => createSign('sha256').update(document).sign(privatePem, 'base64'),
      'latest/dynamic/instance-identity/pkcs7': () => pkcs7(Buffer.from(document), certificate, keys.privateKey),
      'latest/dynamic/instance-identity/rsa2048': () => pkcs7(Buffer.from(document), certificate, keys.privateKey),
    };
    const serve = documents[rest];
    if (!serve) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(await serve());
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const imdsPath = /^\/imds\/([^/]+)\/(.*)$/.exec(req.url ?? '');
    if (imdsPath) return imds(req, res, imdsPath[1], imdsPath[2]);
    const body = await readBody(req);
    const verified = await verifySigV4({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body }, (id) => iam.signingSecret(id));
    if (!verified.ok) return ec2Error(res, verified.status, verified.code === 'InvalidClientTokenId' ? 'AuthFailure' : verified.code, verified.message);
    if (verified.region !== region) return ec2Error(res, 401, 'AuthFailure', `Credential should be scoped to a valid region, not '${verified.region}'.`);
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('Action') !== 'DescribeInstances') return ec2Error(res, 400, 'InvalidAction', `The action ${form.get('Action') ?? ''} is not valid for this web service.`);
    if (faults.times > 0) {
      faults.times--;
      return ec2Error(res, faults.status, 'Unavailable', 'The service is unavailable.');
    }
    const ids = [...form.entries()].filter(([name]) => /^InstanceId\.\d+$/.test(name)).map(([, id]) => id);
    // Callers see their own account's instances: long-term keys are of the emulated account, sessions of their role's.
    const account = iam.sessions.get(verified.accessKeyId)?.arn.split(':')[4] ?? ACCOUNT_ID;
    const missing = ids.filter((id) => instances.get(id)?.region !== region || instances.get(id)?.accountId !== account);
    if (missing.length) return ec2Error(res, 400, 'InvalidInstanceID.NotFound', `The instance ID '${missing.join(', ')}' does not exist`);
    const found = ids.map((id) => instances.get(id)!);
    const reservations = found.map((instance) => ({ reservationId: `r-${instance.id.slice(2)}`, ownerId: instance.accountId, instancesSet: [instanceXml(instance)] }));
    xml(res, 200, `<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>${randomUUID()}</requestId>${toXml('reservationSet', reservations, 'item')}</DescribeInstancesResponse>`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => ec2Error(res, 500, 'InternalError', 'internal error'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    instances,
    certificatePem: cert.toString('pem'),
    launch(options = {}) {
      const instance: Instance = {
        id: `i-${randomBytes(8).toString('hex').slice(0, 17)}`,
        imageId: 'ami-0123456789abcdef0',
        region,
        accountId: ACCOUNT_ID,
        vpcId: 'vpc-1a2b3c4d',
        subnetId: 'subnet-1a2b3c4d',
        state: 'running',
        tags: {},
        pendingTime: new Date(Math.floor(Date.now() / 1000) * 1000),
        ...options,
      };
      instances.set(instance.id, instance);
      return instance;
    },
    imdsUrl: (instanceId) => `${url}/imds/${instanceId}`,
    failNext(status, times = 1) {
      faults = { status, times };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
