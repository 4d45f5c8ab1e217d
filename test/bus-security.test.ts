/**
 * The bus is a trust boundary: a process with NATS access but not the cluster key gets no key
 * material, cannot seal the cluster and cannot use the engine services; and the NATS server of the
 * deployment (deploy/nats/nats.conf) requires TLS and confines each user to its subjects.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { connect, type ConnectionOptions, type NatsConnection, type NatsError } from 'nats';
import { createBus, type Bus } from '@svc/bus';
import { api, eventually, initAndUnseal, NATS_URL, startServerProcess, startTopology, type Topology } from '@svc/testing';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const b64 = (value: string) => Buffer.from(value).toString('base64');
const SECRET = 'attack at dawn';

/** Enables transit with an exportable key; returns a ciphertext of SECRET. */
async function prepareTransit(url: string, token: string): Promise<string> {
  expect((await api(url, 'POST', '/v1/sys/mounts/transit', { token, body: { type: 'transit' } })).status).toBe(204);
  expect((await api(url, 'POST', '/v1/transit/keys/app', { token, body: { exportable: true } })).status).toBe(200);
  const encrypted = await api<{ data: { ciphertext: string } }>(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: b64(SECRET) } });
  expect(encrypted.status).toBe(200);
  return encrypted.body.data.ciphertext;
}

async function decrypts(url: string, token: string, ciphertext: string): Promise<string> {
  const decrypted = await api<{ data: { plaintext: string } }>(url, 'POST', '/v1/transit/decrypt/app', { token, body: { ciphertext } });
  expect(decrypted.status).toBe(200);
  return Buffer.from(decrypted.body.data.plaintext, 'base64').toString();
}

/** Resolves with the log line of `process` that reports refusing a message on `subject`. */
async function refusalLogged(topology: Topology, processName: string, subject: string): Promise<Record<string, unknown>> {
  const logs = topology.processes.find((p) => p.name === processName)!.logs;
  const refusal = () => logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.msg === 'bus message refused' && entry.subject === subject);
  await eventually(async () => refusal() !== undefined);
  return refusal()!;
}

describe('a process with NATS access but no cluster key (distributed)', () => {
  let topology: Topology;
  let url: string;
  let token: string;
  let ciphertext: string;
  let prefix: string;
  let rogue: NatsConnection;

  beforeAll(async () => {
    topology = await startTopology('distributed', { services: ['transit'] });
    url = topology.urls[0];
    token = (await initAndUnseal(url)).rootToken;
    ciphertext = await prepareTransit(url, token);
    prefix = topology.bus!.subjectPrefix;
    rogue = await connect({ servers: [NATS_URL] });
  }, 90_000);

  afterAll(async () => {
    await rogue?.close();
    await topology?.stop();
  });

  test('asks for the keyring with its own X25519 key and gets nothing; the gateway logs it', async () => {
    const publicKey = generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64');

    const answer = rogue.request(`${prefix}.keyring.request`, json({ publicKey }), { timeout: 2_000 });

    await expect(answer).rejects.toMatchObject({ code: 'TIMEOUT' });
    const logged = await refusalLogged(topology, 'gateway-0', `${prefix}.keyring.request`);
    expect(logged).toMatchObject({ level: 40, reason: 'unauthenticated' });
    expect(JSON.stringify(logged)).not.toContain(publicKey);
  });

  test('a forged seal broadcast leaves the cluster unsealed and serving', async () => {
    rogue.publish(`${prefix}.keyring.seal`);
    await rogue.flush();

    // Both the gateway and the service heard it and refused it.
    await refusalLogged(topology, 'gateway-0', `${prefix}.keyring.seal`);
    await refusalLogged(topology, 'transit', `${prefix}.keyring.seal`);
    const status = await api<{ sealed: boolean }>(url, 'GET', '/v1/sys/seal-status');
    expect(status.body.sealed).toBe(false);
    expect(await decrypts(url, token, ciphertext)).toBe(SECRET);
  });

  test('engine requests sent straight to the transit service get no key and no plaintext', async () => {
    const mounts = await api<{ data: Record<string, Record<string, unknown>> }>(url, 'GET', '/v1/sys/mounts', { token });
    const mount = { ...mounts.body.data['transit/'], path: 'transit/', namespace: '' };
    const operation = (op: string, opPath: string, data: Record<string, unknown>) => ({
      kind: 'operation',
      requestId: 'forged',
      mount,
      operation: op,
      path: opPath,
      data,
      headers: {},
      caller: { tokenAccessor: 'forged', policies: ['root'], entityId: '', displayName: 'root', namespace: '', meta: {} },
      capabilities: ['root'],
    });
    const forged = [operation('read', 'export/encryption-key/app', {}), operation('update', 'decrypt/app', { ciphertext })];
    const subject = `${prefix}.transit.request`;

    for (const message of forged) {
      await expect(rogue.request(subject, json(message), { timeout: 2_000 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    }
    await refusalLogged(topology, 'transit', subject);

    // The same messages from a member of the cluster are answered: they are real requests.
    const member: Bus = await createBus({ servers: [NATS_URL], subjectPrefix: prefix, clusterKeyFile: topology.bus!.clusterKeyFile });
    try {
      const answers = await Promise.all(forged.map(async (message) => (await member.request(subject, json(message))).payload));
      expect(Buffer.from(answers[0]).toString()).toContain('"keys"');
      expect(Buffer.from(answers[1]).toString()).toContain(b64(SECRET));
    } finally {
      await member.close();
    }
  });

  test('the cluster still serves: encrypt and decrypt round trip', async () => {
    const encrypted = await api<{ data: { ciphertext: string } }>(url, 'POST', '/v1/transit/encrypt/app', { token, body: { plaintext: b64('still here') } });
    expect(encrypted.status).toBe(200);
    expect(await decrypts(url, token, encrypted.body.data.ciphertext)).toBe('still here');
  });
});

describe('a process configured for NATS without a usable cluster key', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-no-cluster-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test.each([
    ['no cluster_key_file', '', /cluster_key_file is required.*openssl rand -base64 32 > cluster\.key/],
    ['a key file with 16 bytes', 'short.key', /holds 16 bytes of key material, at least 32 are needed/],
  ])('refuses to start with %s, saying how to make one', async (_case, keyFile, message) => {
    writeFileSync(path.join(dir, 'short.key'), randomBytes(16).toString('base64'), { mode: 0o600 });
    const keyLine = keyFile ? `  cluster_key_file = "${path.join(dir, keyFile)}"\n` : '';
    const config = path.join(dir, `service-${keyFile || 'none'}.hcl`);
    writeFileSync(config, `storage "inmem" {}\nbus "nats" {\n  servers = ["${NATS_URL}"]\n${keyLine}}\n`);

    await expect(startServerProcess('transit', [`-config=${config}`, '-service=transit'])).rejects.toThrow(message);
  });
});

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=svc test CA');
  for (const [name, extensions] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', 'extendedKeyUsage=clientAuth\n'],
  ]) {
    writeFileSync(path.join(dir, `${name}.ext`), extensions);
    openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=svc test ${name}`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
  }
}

/** Runs nats-server with `config`; resolves once it is ready for clients, with the port it took. */
function startNatsServer(config: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn('/usr/sbin/nats-server', ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  const output: string[] = [];
  let port = 0;
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      output.push(line);
      port ||= Number(/Listening for client connections on .*:(\d+)$/.exec(line)?.[1] ?? 0);
      if (line.includes('Server is ready')) resolve({ child, port });
    });
    child.once('exit', (code) => reject(new Error(`nats-server exited with ${code}:\n${output.join('\n')}`)));
  });
}

describe('NATS configured by deploy/nats/nats.conf: TLS and two users (distributed)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-nats-tls-'));
  // nats.conf reads the passwords as unquoted values: one starting with a digit would parse as a
  // number, or not at all, so these start with a letter.
  const password = () => `p${randomBytes(12).toString('hex')}`;
  const passwords = { gateway: password(), service: password() };
  const tls = (file: string) => path.join(dir, file);
  let natsServer: ChildProcess;
  let natsUrl: string;
  let topology: Topology;

  /** A client of this NATS server: TLS with the client certificate, plus `options`. */
  const client = (options: Partial<ConnectionOptions> = {}) =>
    connect({ servers: [natsUrl], tls: { caFile: tls('ca.crt'), certFile: tls('client.crt'), keyFile: tls('client.key') }, ...options });

  beforeAll(async () => {
    makeCertificates(dir);
    // Our own certificates, and a port of the server's choosing (-1) so no other test's can clash.
    const config = readFileSync(path.join(__dirname, '..', 'deploy', 'nats', 'nats.conf'), 'utf8')
      .replaceAll('/etc/nats/tls/', `${dir}/`)
      .replace(/^port: 4222$/m, 'port: -1');
    writeFileSync(path.join(dir, 'nats.conf'), config);
    const started = await startNatsServer(path.join(dir, 'nats.conf'), {
      NATS_GATEWAY_PASSWORD: passwords.gateway,
      NATS_SERVICE_PASSWORD: passwords.service,
    });
    natsServer = started.child;
    natsUrl = `tls://127.0.0.1:${started.port}`;
    const busLines = (user: keyof typeof passwords) =>
      [
        `  user = "${user}"`,
        `  password = "${passwords[user]}"`,
        `  inbox_prefix = "_INBOX_${user}"`,
        `  tls_ca_file = "${tls('ca.crt')}"`,
        `  tls_cert_file = "${tls('client.crt')}"`,
        `  tls_key_file = "${tls('client.key')}"`,
      ].join('\n');
    // The configuration names the subjects with the default prefix; this NATS server is ours alone.
    topology = await startTopology('distributed', {
      services: ['transit'],
      subjectPrefix: 'svc',
      nats: { url: natsUrl, gateway: busLines('gateway'), service: busLines('service') },
    });
  }, 120_000);

  afterAll(async () => {
    await topology?.stop();
    natsServer?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the cluster works over TLS with the gateway and service users', async () => {
    const url = topology.urls[0];
    const { rootToken } = await initAndUnseal(url);

    const ciphertext = await prepareTransit(url, rootToken);

    expect(await decrypts(url, rootToken, ciphertext)).toBe(SECRET);
  });

  test('the service user may not subscribe to keyring requests nor publish engine requests', async () => {
    const service = await client({ user: 'service', pass: passwords.service });
    try {
      const refused = await new Promise<NatsError>((resolve) => service.subscribe('svc.keyring.request', { callback: (err) => err && resolve(err) }));
      expect(refused.code).toBe('PERMISSIONS_VIOLATION');
      expect(refused.message).toContain('svc.keyring.request');

      await expect(service.request('svc.transit.request', json({}), { timeout: 2_000 })).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    } finally {
      await service.close();
    }
  });

  test('the service user may not publish seals, announcements, root key requests, mount removals or replica sync', async () => {
    const service = await client({ user: 'service', pass: passwords.service });
    const refusedPublishes: string[] = [];
    void (async () => {
      for await (const status of service.status()) {
        if (status.permissionContext?.operation === 'publish') refusedPublishes.push(status.permissionContext.subject);
      }
    })();
    const gatewaySubjects = ['svc.keyring.seal', 'svc.keyring.root-key', 'svc.keyring.announce', 'svc.mounts.removed', 'svc.replicas.invalidate', 'svc.replicas.ack.x'];
    try {
      for (const subject of gatewaySubjects) service.publish(subject);

      await eventually(async () => refusedPublishes.length === gatewaySubjects.length);
      expect(refusedPublishes.sort()).toEqual([...gatewaySubjects].sort());
    } finally {
      await service.close();
    }
  });

  test('a client without credentials, or without a client certificate, is refused', async () => {
    await expect(client()).rejects.toMatchObject({ code: 'AUTHORIZATION_VIOLATION' });
    const withoutClientCertificate = { servers: [natsUrl], user: 'gateway', pass: passwords.gateway, timeout: 2_000 };
    await expect(connect({ ...withoutClientCertificate, tls: { caFile: tls('ca.crt') } })).rejects.toThrow();
    await expect(connect(withoutClientCertificate)).rejects.toThrow();
  });
});
