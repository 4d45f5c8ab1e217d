/**
 * Issue 15, the transit seal's TLS options (Vault's `tls_ca_cert`, `tls_client_cert`,
 * `tls_client_key`, `tls_server_name`, `tls_skip_verify`) against a second Secrets Service whose
 * listener serves TLS with a certificate from a private CA made here. The certificate names only
 * `seal.internal`, so the seal reaching it at 127.0.0.1 must be told the name. A front made here
 * that requires a client certificate from the same CA stands for a provider behind mutual TLS.
 *
 * The sealed service is one process over PostgreSQL storage, restarted with each seal stanza:
 * every start asks the provider for the root key over TLS.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { POSTGRES_URL, api, createTestCa, dropTable, eventually, initAndUnseal, prepareTransitSealProvider, startServerProcess, type ServerProcess, type TestCa } from '@svc/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

describe('transit seal over TLS', () => {
  const table = `svc_e2e_seal_tls_${process.pid}`;
  let dir: string;
  let ca: TestCa;
  let otherCa: TestCa;
  let provider: ServerProcess;
  let providerToken: string;
  let tlsAddress: string;
  let mutualTlsFront: TlsServer;
  let sealed: ServerProcess | undefined;
  let root: string;

  /** Starts the sealed service with this seal stanza (over the same storage each time). */
  const startSealed = async (seal: string): Promise<string> => {
    await sealed?.stop();
    const config = path.join(dir, 'sealed.hcl');
    writeFileSync(
      config,
      `listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n}\nstorage "postgresql" {\n  connection_url = "${POSTGRES_URL}"\n  table = "${table}"\n}\n${seal}`,
    );
    sealed = await startServerProcess('sealed', [`-config=${config}`], 60_000);
    return `http://${sealed.addresses[0]}`;
  };
  const transitSeal = (address: string, tls: string) => `seal "transit" {\n  address = "${address}"\n  token = "${providerToken}"\n  key_name = "autounseal"\n${tls}}\n`;
  const sealStatus = async (url: string) => (await api<Body>(url, 'GET', '/v1/sys/seal-status')).body;
  const unsealsItself = (url: string) => eventually(async () => (await sealStatus(url)).sealed === false, 30_000);
  /** Stays sealed, answers 503, and logs why the provider could not be used. */
  const staysSealed = async (url: string, problem: RegExp) => {
    await eventually(async () => sealed!.logs.some((line) => line.includes('the seal could not unseal the service')), 30_000);
    expect(await sealStatus(url)).toMatchObject({ initialized: true, sealed: true, type: 'transit' });
    expect((await api(url, 'GET', '/v1/secret/kept', { token: root })).status).toBe(503);
    const line = sealed!.logs.find((entry) => entry.includes('the seal could not unseal the service')) ?? '';
    expect(line).toMatch(problem);
    expect(line).not.toContain(providerToken);
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-seal-tls-'));
    ca = createTestCa(path.join(dir, 'ca'), 'svc seal test CA');
    otherCa = createTestCa(path.join(dir, 'other-ca'), 'some other CA');
    const server = ca.issue('provider', ['seal.internal']);
    const config = path.join(dir, 'provider.hcl');
    writeFileSync(
      config,
      'listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n}\n' +
        `listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_cert_file = "${server.cert}"\n  tls_key_file = "${server.key}"\n}\nstorage "inmem" {}\n`,
    );
    provider = await startServerProcess('seal-provider', [`-config=${config}`], 60_000);
    const [plain, tls] = provider.addresses;
    tlsAddress = `https://${tls}`;
    const { rootToken } = await initAndUnseal(`http://${plain}`);
    providerToken = await prepareTransitSealProvider(`http://${plain}`, rootToken);

    // Mutual TLS in front of the provider's plain listener: only a client certificate from the CA gets through.
    const front = ca.issue('front', ['seal.internal']);
    const [host, port] = plain.split(':');
    mutualTlsFront = createTlsServer({ cert: readFileSync(front.cert), key: readFileSync(front.key), ca: readFileSync(ca.caCert), requestCert: true, rejectUnauthorized: true }, (socket) => {
      const upstream = connect(Number(port), host);
      socket.pipe(upstream).pipe(socket);
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => mutualTlsFront.listen(0, '127.0.0.1', resolve));
  }, 120_000);

  afterAll(async () => {
    await sealed?.stop();
    await provider?.stop();
    await new Promise((resolve) => mutualTlsFront?.close(resolve));
    await dropTable(table);
    rmSync(dir, { recursive: true, force: true });
  });

  it('with tls_ca_cert and tls_server_name: initializes through the TLS listener, and a restart unseals itself', async () => {
    const url = await startSealed(transitSeal(tlsAddress, `  tls_ca_cert = "${ca.caCert}"\n  tls_server_name = "seal.internal"\n`));
    const init = await api<Body>(url, 'PUT', '/v1/sys/init', { body: { recovery_shares: 1, recovery_threshold: 1 } });
    expect(init.status).toBe(200);
    root = init.body.root_token as string;
    expect((await api(url, 'PUT', '/v1/secret/kept', { token: root, body: { value: 'kept' } })).status).toBe(204);
    const again = await startSealed(transitSeal(tlsAddress, `  tls_ca_cert = "${ca.caCert}"\n  tls_server_name = "seal.internal"\n`));
    await unsealsItself(again);
    expect((await api<Body>(again, 'GET', '/v1/secret/kept', { token: root })).body.data).toEqual({ value: 'kept' });
  });

  it('a CA that did not issue the certificate: stays sealed, 503, and the log names the certificate problem', async () => {
    const url = await startSealed(transitSeal(tlsAddress, `  tls_ca_cert = "${otherCa.caCert}"\n  tls_server_name = "seal.internal"\n`));
    await staysSealed(url, /transit seal at https:\/\/127\.0\.0\.1:\d+ \(transit\/decrypt\/autounseal\): unreachable: (unable to verify the first certificate|self-signed certificate in certificate chain)/);
  });

  it('without tls_server_name the certificate does not name the address: stays sealed, saying so', async () => {
    const url = await startSealed(transitSeal(tlsAddress, `  tls_ca_cert = "${ca.caCert}"\n`));
    await staysSealed(url, /Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list.*ERR_TLS_CERT_ALTNAME_INVALID/);
  });

  it('tls_skip_verify accepts the certificate without checking it', async () => {
    await unsealsItself(await startSealed(transitSeal(tlsAddress, '  tls_skip_verify = true\n')));
  });

  it('mutual TLS: tls_client_cert and tls_client_key get through a front that requires them; without them it stays sealed', async () => {
    const front = `https://127.0.0.1:${(mutualTlsFront.address() as AddressInfo).port}`;
    const client = ca.issue('gateway-client', ['gateway.internal']);
    const trust = `  tls_ca_cert = "${ca.caCert}"\n  tls_server_name = "seal.internal"\n`;
    await unsealsItself(await startSealed(transitSeal(front, `${trust}  tls_client_cert = "${client.cert}"\n  tls_client_key = "${client.key}"\n`)));
    const url = await startSealed(transitSeal(front, trust));
    await staysSealed(url, /transit seal at https:\/\/127\.0\.0\.1:\d+ \(transit\/decrypt\/autounseal\): unreachable: /);
  });
});
