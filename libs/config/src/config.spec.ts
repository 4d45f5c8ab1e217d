import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TELEMETRY } from '@svc/metrics';
import { ConfigError, DEFAULT_ADDRESS, DEFAULT_JSON_LIMITS, DEFAULT_TIMEOUTS, devConfig, loadConfigFile, parseConfig, parseHcl } from './index';

/** What the server's registry would pass: the config lib knows no service names of its own. */
const KNOWN_SERVICES = ['gateway', 'transit'];

let dir: string;
let cert: string;
let key: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-config-'));
  cert = join(dir, 'server.crt');
  key = join(dir, 'server.key');
  await writeFile(cert, 'certificate');
  await writeFile(key, 'key');
});

afterAll(() => rm(dir, { recursive: true, force: true }));

const minimalHcl = 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\n';

async function expectConfigError(promise: Promise<unknown>, message: string | RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as Error).message).toMatch(message);
}

describe('HCL', () => {
  it('reads every stanza', async () => {
    const text = `
ui = true
api_addr = "https://svc.example.com:8200"
cluster_addr = "https://10.0.0.1:8201"
log_level = "DEBUG"
default_lease_ttl = "1h"
max_lease_ttl = "48h"
services = ["gateway", "transit"]

listener "tcp" {
  address = "0.0.0.0:8200"
  tls_cert_file = "${cert}"
  tls_key_file = "${key}"
  tls_min_version = "tls13"
  max_request_size = 1024
  require_request_header = true
  disable_unauthed_rekey_endpoints = true
  disable_unauthed_generate_root_endpoints = true
  http_read_header_timeout = "2s"
  http_read_timeout = "1m"
  http_write_timeout = 90
  http_idle_timeout = "1h"
  max_json_depth = 50
  max_json_string_value_length = 4096
  max_json_object_entry_count = 100
  max_json_array_element_count = 200
  custom_response_headers = {
    "default" = { "Strict-Transport-Security" = ["max-age=31536000", "includeSubDomains"] }
    "200" = { "X-Ok" = ["yes"] }
    "3xx" = { "X-Redirect" = ["r"] }
  }
}

listener "tcp" {
  address = "127.0.0.1:8300"
  cluster_address = "127.0.0.1:9300"
  tls_disable = "true"
  custom_response_headers {
    default = { "X-Plain" = ["p"] }
  }
}

storage "postgresql" {
  connection_url = "postgres://svc:secret@db:5432/svc"
  table = "svc_store"
  max_connections = 20
}

bus "nats" {
  servers = ["nats://n1:4222", "nats://n2:4222"]
  user = "svc"
  password = "pw"
  tls_ca_file = "/etc/nats/ca.pem"
  request_timeout = "500ms"
  cluster_key_file = "/etc/svc/cluster.key"
  inbox_prefix = "_INBOX_gateway"
}

locks "redis" {
  address = "redis:6379"
  password = "pw"
  db = 2
  tls = 1
  key_prefix = "svc:"
}

seal "shamir" {}

provider_endpoints {
  codehost = "https://github.example.com/api/v3"
  cloud_sm = "http://127.0.0.1:4566"
}
`;
    const config = await parseConfig(text, 'hcl', 'config.hcl', {}, KNOWN_SERVICES);
    expect(config).toEqual({
      listeners: [
        {
          type: 'tcp',
          address: '0.0.0.0:8200',
          clusterAddress: '0.0.0.0:8201',
          tlsDisable: false,
          tlsCertFile: cert,
          tlsKeyFile: key,
          tlsMinVersion: 'tls13',
          maxRequestSize: 1024,
          requireRequestHeader: true,
          disableUnauthedRekeyEndpoints: true,
          disableUnauthedGenerateRootEndpoints: true,
          customResponseHeaders: {
            default: { 'Strict-Transport-Security': ['max-age=31536000', 'includeSubDomains'] },
            '200': { 'X-Ok': ['yes'] },
            '3xx': { 'X-Redirect': ['r'] },
          },
          unauthenticatedMetricsAccess: false,
          timeouts: { readHeaderMs: 2000, readMs: 60_000, writeMs: 90_000, idleMs: 3_600_000 },
          jsonLimits: { maxDepth: 50, maxStringValueLength: 4096, maxObjectEntryCount: 100, maxArrayElementCount: 200 },
        },
        {
          type: 'tcp',
          address: '127.0.0.1:8300',
          clusterAddress: '127.0.0.1:9300',
          tlsDisable: true,
          tlsMinVersion: 'tls12',
          maxRequestSize: 32 * 1024 * 1024,
          requireRequestHeader: false,
          disableUnauthedRekeyEndpoints: false,
          disableUnauthedGenerateRootEndpoints: false,
          customResponseHeaders: { default: { 'X-Plain': ['p'] } },
          unauthenticatedMetricsAccess: false,
          timeouts: DEFAULT_TIMEOUTS,
          jsonLimits: DEFAULT_JSON_LIMITS,
        },
      ],
      storage: {
        type: 'postgresql',
        options: { connection_url: 'postgres://svc:secret@db:5432/svc', table: 'svc_store', max_connections: 20 },
      },
      bus: {
        type: 'nats',
        servers: ['nats://n1:4222', 'nats://n2:4222'],
        user: 'svc',
        password: 'pw',
        tls: { caFile: '/etc/nats/ca.pem' },
        requestTimeoutMs: 500,
        clusterKeyFile: '/etc/svc/cluster.key',
        inboxPrefix: '_INBOX_gateway',
      },
      locks: { type: 'redis', address: 'redis:6379', password: 'pw', db: 2, tls: true, keyPrefix: 'svc:' },
      seal: { type: 'shamir' },
      ui: true,
      apiAddr: 'https://svc.example.com:8200',
      clusterAddr: 'https://10.0.0.1:8201',
      logLevel: 'debug',
      defaultLeaseTtl: 3600,
      maxLeaseTtl: 172800,
      maxRequestDurationMs: 90_000,
      services: ['gateway', 'transit'],
      providerEndpoints: { codehost: 'https://github.example.com/api/v3', cloud_sm: 'http://127.0.0.1:4566' },
      telemetry: DEFAULT_TELEMETRY,
      warnings: [],
    });
  });

  it('provider_endpoints: SVC_PROVIDER_ENDPOINT_* fill what the file leaves out; a field that is not an http(s) URL is refused', async () => {
    const text = `${minimalHcl}provider_endpoints {\n  webhost = "https://vercel.example.com"\n}\n`;
    const environment = { SVC_PROVIDER_ENDPOINT_WEBHOST: 'https://ignored.example.com', SVC_PROVIDER_ENDPOINT_CLOUDC_SM: 'https://secretmanager.example.com' };
    expect((await parseConfig(text, 'hcl', 'config.hcl', environment)).providerEndpoints).toEqual({ webhost: 'https://vercel.example.com', cloudc_sm: 'https://secretmanager.example.com' });
    await expectConfigError(parseConfig(`${minimalHcl}provider_endpoints {\n  codehost = "github.example.com"\n}\n`, 'hcl', 'config.hcl', {}), 'config.hcl: provider_endpoints: codehost must be an http(s) URL such as https://api.example.com');
  });

  it('reads workers', async () => {
    expect((await parseConfig(`${minimalHcl}\nworkers = 4`, 'hcl', 'config.hcl')).workers).toBe(4);
  });

  it('sizes the read cache with cache_size (a number or a string, as Vault writes it) and turns it off with disable_cache', async () => {
    const cacheSize = async (lines: string) => (await parseConfig(`${minimalHcl}\n${lines}`, 'hcl', 'config.hcl')).cacheSize;
    expect(await cacheSize('')).toBeUndefined();
    expect(await cacheSize('cache_size = 1000')).toBe(1000);
    expect(await cacheSize('cache_size = "131072"')).toBe(131072);
    expect(await cacheSize('disable_cache = true\ncache_size = 1000')).toBe(0);
    expect(await cacheSize('disable_cache = false')).toBeUndefined();
  });

  it('applies defaults to a minimal file', async () => {
    const config = await parseConfig(minimalHcl, 'hcl', 'config.hcl');
    expect(config.listeners).toEqual([
      {
        type: 'tcp',
        address: '127.0.0.1:8200',
        clusterAddress: '127.0.0.1:8201',
        tlsDisable: true,
        tlsMinVersion: 'tls12',
        maxRequestSize: 33554432,
        requireRequestHeader: false,
        disableUnauthedRekeyEndpoints: false,
        disableUnauthedGenerateRootEndpoints: false,
        customResponseHeaders: {},
        unauthenticatedMetricsAccess: false,
        timeouts: { readHeaderMs: 10_000, readMs: 30_000, writeMs: 0, idleMs: 300_000 },
        jsonLimits: { maxDepth: 500, maxStringValueLength: 1024 * 1024, maxObjectEntryCount: 10_000, maxArrayElementCount: 10_000 },
      },
    ]);
    expect(config.storage).toEqual({ type: 'inmem', options: {} });
    expect(config.seal).toEqual({ type: 'shamir' });
    expect(config.bus).toBeUndefined();
    expect(config.locks).toBeUndefined();
    expect(config.services).toBeUndefined();
    expect(config.workers).toBeUndefined();
    expect(config.ui).toBe(false);
    expect(config.logLevel).toBe('info');
    expect(config.defaultLeaseTtl).toBe(2764800);
    expect(config.maxLeaseTtl).toBe(2764800);
  });

  it('reads an awskms seal with Vault\'s fields; SVC_AWSKMS_SEAL_KEY_ID and AWS_KMS_ENDPOINT beat the file', async () => {
    const text =
      'listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "awskms" {\n region = "eu-west-1"\n access_key = "AKIAEXAMPLE"\n secret_key = "s3cret"\n session_token = "tok"\n kms_key_id = "alias/seal"\n endpoint = "https://kms.internal:4443"\n}';
    const config = await parseConfig(text, 'hcl', 'config.hcl', {}, KNOWN_SERVICES);
    expect(config.seal).toEqual({ type: 'awskms', region: 'eu-west-1', accessKey: 'AKIAEXAMPLE', secretKey: 's3cret', sessionToken: 'tok', kmsKeyId: 'alias/seal', endpoint: 'https://kms.internal:4443' });
    expect(config.warnings ?? []).toEqual([]);

    const minimal = 'listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "awskms" {\n kms_key_id = "alias/seal"\n}';
    const fromEnvironment = await parseConfig(minimal, 'hcl', 'config.hcl', { SVC_AWSKMS_SEAL_KEY_ID: 'alias/other', AWS_KMS_ENDPOINT: 'http://127.0.0.1:4566' }, KNOWN_SERVICES);
    expect(fromEnvironment.seal).toEqual({ type: 'awskms', kmsKeyId: 'alias/other', endpoint: 'http://127.0.0.1:4566' });
    const keyOnlyInEnvironment = 'listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "awskms" {}';
    expect((await parseConfig(keyOnlyInEnvironment, 'hcl', 'config.hcl', { SVC_AWSKMS_SEAL_KEY_ID: 'k-1' }, KNOWN_SERVICES)).seal).toEqual({ type: 'awskms', kmsKeyId: 'k-1' });
  });

  it('reads the transit seal\'s TLS options, checking the files now', async () => {
    const seal = (tls: string) => `listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "transit" {\n address = "https://seal:8200"\n token = "t"\n key_name = "k"\n${tls}}`;
    const config = await parseConfig(seal(` tls_ca_cert = "${cert}"\n tls_client_cert = "${cert}"\n tls_client_key = "${key}"\n tls_server_name = "seal.internal"\n tls_skip_verify = false\n`), 'hcl', 'config.hcl', {}, KNOWN_SERVICES);
    expect(config.seal).toMatchObject({ type: 'transit', tls: { caCert: cert, clientCert: cert, clientKey: key, serverName: 'seal.internal' } });
    expect(config.warnings ?? []).toEqual([]);
    await expectConfigError(parseConfig(seal(` tls_ca_cert = "${join(dir, 'missing.pem')}"\n`), 'hcl', 'config.hcl', {}, KNOWN_SERVICES), `config.hcl: seal "transit": tls_ca_cert "${join(dir, 'missing.pem')}" cannot be read (ENOENT)`);
    await expectConfigError(parseConfig(seal(` tls_client_cert = "${cert}"\n`), 'hcl', 'config.hcl', {}, KNOWN_SERVICES), 'config.hcl: seal "transit": tls_client_cert and tls_client_key must be given together');
  });

  it('reads a transit seal with its defaults', async () => {
    const text = 'listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "transit" {\n address = "https://seal:8200"\n token = "s.t"\n key_name = "autounseal"\n namespace = "ops/"\n}';
    const config = await parseConfig(text, 'hcl', 'config.hcl', process.env, KNOWN_SERVICES);
    expect(config.seal).toEqual({ type: 'transit', address: 'https://seal:8200', token: 's.t', keyName: 'autounseal', mountPath: 'transit', namespace: 'ops/', disableRenewal: false });
    expect(config.warnings ?? []).toEqual([]);
  });

  it('reads a pkcs11 seal with its defaults, and the SVC_HSM_* variables beat the file', async () => {
    const text = 'listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/usr/lib/softhsm/libsofthsm2.so"\n slot = "0x10"\n pin = "1234"\n key_label = "svc-root"\n key_id = "0x0A01"\n}';
    const config = await parseConfig(text, 'hcl', 'config.hcl', {}, KNOWN_SERVICES);
    expect(config.seal).toEqual({ type: 'pkcs11', lib: '/usr/lib/softhsm/libsofthsm2.so', slot: '16', pin: '1234', keyLabel: 'svc-root', keyId: '0a01', generateKey: false, rsaOaepHash: 'sha256' });
    expect(config.warnings ?? []).toEqual([]);
    const environment = { SVC_HSM_PIN: 'from-env', SVC_HSM_MECHANISM: '0x0009', SVC_HSM_GENERATE_KEY: 'true', SVC_HSM_RSA_OAEP_HASH: 'sha1' };
    expect((await parseConfig(text, 'hcl', 'config.hcl', environment, KNOWN_SERVICES)).seal).toMatchObject({ pin: 'from-env', mechanism: 'CKM_RSA_PKCS_OAEP', generateKey: true, rsaOaepHash: 'sha1' });
  });

  it('reads the seal being migrated from, marked disabled, beside the seal in force', async () => {
    const transit = 'seal "transit" {\n address = "https://seal:8200"\n token = "t"\n key_name = "k"\n disabled = "true"\n}';
    const pkcs11 = 'seal "pkcs11" {\n lib = "/lib.so"\n token_label = "svc"\n pin = "1234"\n key_label = "k"\n generate_key = true\n}';
    const both = await parseConfig(`listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\n${transit}\n${pkcs11}`, 'hcl', 'config.hcl');
    expect(both.seal).toMatchObject({ type: 'pkcs11', tokenLabel: 'svc', generateKey: true });
    expect(both.disabledSeal).toMatchObject({ type: 'transit', address: 'https://seal:8200' });
    expect(both.warnings ?? []).toEqual([]);
    const toShamir = await parseConfig(`listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\n${transit}`, 'hcl', 'config.hcl');
    expect(toShamir.seal).toEqual({ type: 'shamir' });
    expect(toShamir.disabledSeal).toMatchObject({ type: 'transit' });
    expect((await parseConfig(`listener "tcp" { tls_disable = 1 }\nstorage "inmem" {}\n${pkcs11}`, 'hcl', 'config.hcl')).disabledSeal).toBeUndefined();
  });

  it('reads embedded storage, a bus address, a token and lease TTLs in seconds', async () => {
    const text = `
listener "tcp" { tls_disable = 1 }
storage "embedded" { path = "/var/lib/svc" }
bus "nats" {
  address = "nats://127.0.0.1:4222"
  token = "t"
  creds_file = "/etc/svc/nats.creds"
}
default_lease_ttl = 60
max_lease_ttl = "120"
`;
    const config = await parseConfig(text, 'hcl', 'config.hcl');
    expect(config.storage).toEqual({ type: 'embedded', options: { path: '/var/lib/svc' } });
    expect(config.bus).toEqual({
      type: 'nats',
      servers: ['nats://127.0.0.1:4222'],
      token: 't',
      credsFile: '/etc/svc/nats.creds',
    });
    expect([config.defaultLeaseTtl, config.maxLeaseTtl]).toEqual([60, 120]);
  });

  it('reads default_max_request_duration and refuses one that is not a positive duration', async () => {
    const base = 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\n';
    expect((await parseConfig(`${base}default_max_request_duration = "2m"`, 'hcl', 'config.hcl')).maxRequestDurationMs).toBe(120_000);
    expect((await parseConfig(base, 'hcl', 'config.hcl')).maxRequestDurationMs).toBe(90_000);
    await expect(parseConfig(`${base}default_max_request_duration = "0s"`, 'hcl', 'config.hcl')).rejects.toThrow(
      'config.hcl: default_max_request_duration must be positive',
    );
    await expect(parseConfig(`${base}default_max_request_duration = "soon"`, 'hcl', 'config.hcl')).rejects.toThrow(
      /default_max_request_duration must be a duration/,
    );
  });

  it('treats max_request_size 0 as the default and a negative value as no limit', async () => {
    const config = await parseConfig(
      'listener "tcp" {\n tls_disable = true\n max_request_size = 0\n}\n' +
        'listener "tcp" {\n tls_disable = true\n address = "127.0.0.1:8201"\n max_request_size = -1\n}\n' +
        'storage "inmem" {}\n',
      'hcl',
      'config.hcl',
    );
    expect(config.listeners.map((listener) => listener.maxRequestSize)).toEqual([33554432, Infinity]);
  });

  it("falls back as Vault does for zero timeouts and takes zero JSON limits as the defaults", async () => {
    const listener = async (fields: string) =>
      (await parseConfig(`listener "tcp" {\n tls_disable = true\n ${fields}\n}\nstorage "inmem" {}\n`, 'hcl', 'config.hcl')).listeners[0];
    expect((await listener('http_read_header_timeout = 0\n http_idle_timeout = 0')).timeouts).toEqual({ readHeaderMs: 30_000, readMs: 30_000, writeMs: 0, idleMs: 30_000 });
    expect((await listener('http_read_timeout = 0\n http_idle_timeout = "0s"')).timeouts).toEqual({ readHeaderMs: 10_000, readMs: 0, writeMs: 0, idleMs: 10_000 });
    expect((await listener('max_json_depth = 0')).jsonLimits).toEqual(DEFAULT_JSON_LIMITS);
    await expectConfigError(listener('http_read_timeout = "soon"'), /http_read_timeout must be a duration/);
    await expectConfigError(listener('max_json_depth = -1'), /max_json_depth must be 0/);
  });

  it('accepts Vault-style booleans', async () => {
    for (const [value, expected] of [
      ['"true"', true],
      ['"false"', false],
      ['1', true],
      ['0', false],
      ['"t"', true],
      ['"F"', false],
    ] as const) {
      const config = await parseConfig(
        `listener "tcp" {\n tls_disable = true\n require_request_header = ${value}\n}\nstorage "inmem" {}\n`,
        'hcl',
        'config.hcl',
      );
      expect(config.listeners[0].requireRequestHeader).toBe(expected);
    }
  });

  it('collects unknown keys as warnings instead of failing', async () => {
    const config = await parseConfig(
      'disable_mlock = true\nlistener "tcp" {\n tls_disable = true\n proxy_protocol_behavior = "x"\n}\nstorage "inmem" { foo = 1 }\n',
      'hcl',
      'config.hcl',
    );
    expect(config.warnings).toEqual([
      'config.hcl: listener "tcp" [0]: unknown field "proxy_protocol_behavior" ignored',
      'config.hcl: storage "inmem": unknown field "foo" ignored',
      'config.hcl: unknown field "disable_mlock" ignored',
    ]);
  });

  it("reads Vault's custom_response_headers block with quoted selectors", async () => {
    const text = `
listener "tcp" {
  tls_disable = true
  custom_response_headers {
    "default" = { "Strict-Transport-Security" = ["max-age=31536000"] }
    "307" = { "X-Custom" = ["a", "b"] }
  }
}
storage "inmem" {}
`;
    const config = await parseConfig(text, 'hcl', 'config.hcl');
    expect(config.listeners[0].customResponseHeaders).toEqual({
      default: { 'Strict-Transport-Security': ['max-age=31536000'] },
      '307': { 'X-Custom': ['a', 'b'] },
    });
    expect(config.warnings).toEqual([]);
  });

  it('merges repeated custom_response_headers blocks, later values winning', async () => {
    const text = `
listener "tcp" {
  tls_disable = true
  custom_response_headers {
    "default" = { "X-A" = ["first"], "X-B" = ["b"] }
  }
  custom_response_headers {
    "default" = { "X-A" = ["second"] }
    "4xx" = { "X-E" = ["e"] }
  }
}
storage "inmem" {}
`;
    const config = await parseConfig(text, 'hcl', 'config.hcl');
    expect(config.listeners[0].customResponseHeaders).toEqual({
      default: { 'X-A': ['second'], 'X-B': ['b'] },
      '4xx': { 'X-E': ['e'] },
    });
  });

  it('keeps several listeners in file order, each with its own headers', async () => {
    const text = `
listener "tcp" {
  address = "127.0.0.1:8200"
  tls_disable = true
  custom_response_headers {
    "default" = { "X-Listener" = ["first"] }
  }
}
listener "tcp" {
  address = "127.0.0.1:8201"
  tls_cert_file = "${cert}"
  tls_key_file = "${key}"
}
listener "tcp" {
  address = "127.0.0.1:8202"
  tls_disable = true
  custom_response_headers {
    "200" = { "X-Listener" = ["third"] }
  }
}
storage "inmem" {}
`;
    const config = await parseConfig(text, 'hcl', 'config.hcl');
    expect(
      config.listeners.map(({ address, tlsDisable, customResponseHeaders }) => [address, tlsDisable, customResponseHeaders]),
    ).toEqual([
      ['127.0.0.1:8200', true, { default: { 'X-Listener': ['first'] } }],
      ['127.0.0.1:8201', false, {}],
      ['127.0.0.1:8202', true, { '200': { 'X-Listener': ['third'] } }],
    ]);
  });

  it('reports a syntax error with the line and column the parser stopped at', async () => {
    await expectConfigError(
      parseConfig('listener "tcp" {\n  tls_disable = true\n  max_request_size = \n}\n', 'hcl', 'config.hcl'),
      'config.hcl: invalid HCL: line 5 column 1: object expected closing RBRACE got: EOF',
    );
    await expectConfigError(
      parseConfig('storage "inmem" {}\nlistener "tcp" {\n  address "127.0.0.1:8200"\n}\n', 'hcl', 'config.hcl'),
      "config.hcl: invalid HCL: line 4 column 1: expected '{' or '=' after the key",
    );
  });

  it('never quotes the source text in a syntax error', async () => {
    for (const text of [
      'bus "nats" {\n  servers = ["nats://a:4222"]\n  password = hunter2\n}\n',
      'bus "nats" {\n  servers = ["nats://a:4222"]\n  password "hunter2"\n}\n',
      'locks "redis" {\n  address = "r:6379"\n  db = 99999999999999999999992\n}\n',
    ]) {
      const error = await parseConfig(text, 'hcl', 'config.hcl').catch((err: Error) => err);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^config\.hcl: invalid HCL: /);
      expect((error as Error).message).not.toMatch(/hunter2|99999/);
    }
  });

  it('reads a bus subject prefix', async () => {
    const config = await parseConfig(
      `${minimalHcl}bus "nats" {\n  servers = ["nats://127.0.0.1:4222"]\n  subject_prefix = "svc-prod_2"\n}\n`,
      'hcl',
      'config.hcl',
    );
    expect(config.bus).toEqual({ type: 'nats', servers: ['nats://127.0.0.1:4222'], subjectPrefix: 'svc-prod_2' });
    expect(config.warnings).toEqual([]);
  });

  it('reads the plugin directory, which must be an absolute path', async () => {
    const config = await parseConfig(`${minimalHcl}plugin_directory = "/usr/local/libexec/svc-plugins"\n`, 'hcl', 'config.hcl');
    expect([config.pluginDirectory, config.warnings]).toEqual(['/usr/local/libexec/svc-plugins', []]);
    expect((await parseConfig(minimalHcl, 'hcl', 'config.hcl')).pluginDirectory).toBeUndefined();
    await expectConfigError(parseConfig(`${minimalHcl}plugin_directory = "plugins"\n`, 'hcl', 'config.hcl'), 'config.hcl: plugin_directory must be an absolute path');
  });
});

describe('parseHcl', () => {
  it('returns the HCL v1 shape, every object wrapped in a list', () => {
    expect(parseHcl('path "secret/*" {\n  capabilities = ["read", "list"]\n}\nname = "ops"\n', 'policy.hcl')).toEqual({
      path: [{ 'secret/*': [{ capabilities: ['read', 'list'] }] }],
      name: 'ops',
    });
    expect(parseHcl('', 'empty.hcl')).toEqual({});
  });

  it('throws a ConfigError naming the source and the position', () => {
    expect(() => parseHcl('path "secret/*" {\n  capabilities = ["read" "list"]\n}\n', 'policy.hcl')).toThrow(
      new ConfigError('policy.hcl: invalid HCL: line 2 column 26: error parsing list, expected comma or list end, got: STRING'),
    );
  });
});

describe('JSON', () => {
  it('reads Vault-style JSON with objects and arrays of stanzas', async () => {
    const text = JSON.stringify({
      listener: [
        { tcp: { address: '0.0.0.0:8200', tls_disable: 'true', custom_response_headers: { '4xx': { 'X-E': ['e'] } } } },
        { tcp: { address: '0.0.0.0:8201', tls_disable: true } },
      ],
      storage: { postgresql: { connection_url: 'postgres://db/svc' } },
      bus: { nats: [{ servers: 'nats://a:4222,nats://b:4222', cluster_key_file: '/etc/svc/cluster.key' }] },
      locks: { redis: { address: 'redis:6379' } },
      seal: { shamir: {} },
      ui: 'true',
      services: ['gateway'],
      max_lease_ttl: '768h',
      default_lease_ttl: '10m',
    });
    const config = await parseConfig(text, 'json', 'config.json', process.env, KNOWN_SERVICES);
    expect(config.listeners.map((listener) => [listener.address, listener.tlsDisable])).toEqual([
      ['0.0.0.0:8200', true],
      ['0.0.0.0:8201', true],
    ]);
    expect(config.listeners[0].customResponseHeaders).toEqual({ '4xx': { 'X-E': ['e'] } });
    expect(config.storage).toEqual({ type: 'postgresql', options: { connection_url: 'postgres://db/svc' } });
    expect(config.bus).toEqual({ type: 'nats', servers: ['nats://a:4222', 'nats://b:4222'], clusterKeyFile: '/etc/svc/cluster.key' });
    expect(config.locks).toEqual({ type: 'redis', address: 'redis:6379', tls: false });
    expect(config.ui).toBe(true);
    expect(config.services).toEqual(['gateway']);
    expect([config.defaultLeaseTtl, config.maxLeaseTtl]).toEqual([600, 2764800]);
  });

  it('reports malformed JSON', async () => {
    await expectConfigError(parseConfig('{"listener": ', 'json', 'config.json'), /^config\.json: invalid JSON: /);
    await expectConfigError(
      parseConfig('{\n  "storage": {"inmem": {}}\n  "ui": true\n}', 'json', 'config.json'),
      "config.json: invalid JSON: Expected ',' or '}' after property value at line 3 column 3",
    );
    const error = await parseConfig('hunter2', 'json', 'config.json').catch((err: Error) => err);
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('rejects a configuration that is not an object', async () => {
    await expectConfigError(parseConfig('[1]', 'json', 'c.json'), 'c.json: the configuration must be an object');
  });
});

describe('a configuration without listeners (engine services)', () => {
  it('parses, with no listeners', async () => {
    expect((await parseConfig('storage "inmem" {}', 'hcl', 'service.hcl')).listeners).toEqual([]);
  });
});

describe('validation errors', () => {
  const cases: Array<[string, string, string | RegExp]> = [
    ['no storage', 'listener "tcp" { tls_disable = true }', 'config.hcl: a storage stanza is required'],
    [
      'missing certificate',
      'listener "tcp" {}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: tls_cert_file is required unless tls_disable is set',
    ],
    [
      'second listener without TLS files',
      'listener "tcp" { tls_disable = true }\nlistener "tcp" { address = "127.0.0.1:1" }\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [1]: tls_cert_file is required unless tls_disable is set',
    ],
    [
      'unreadable certificate',
      'listener "tcp" {\n tls_cert_file = "/nonexistent/svc.crt"\n tls_key_file = "/nonexistent/svc.key"\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: tls_cert_file "/nonexistent/svc.crt" cannot be read (ENOENT)',
    ],
    ['unknown listener type', 'listener "unix" {}\nstorage "inmem" {}', 'config.hcl: listener "unix" [0]: unsupported listener type "unix" (supported: tcp)'],
    [
      'bad address',
      'listener "tcp" {\n tls_disable = true\n address = "localhost"\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: address must be host:port',
    ],
    [
      'bad TLS version',
      'listener "tcp" {\n tls_disable = true\n tls_min_version = "ssl3"\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: tls_min_version must be one of tls10, tls11, tls12, tls13',
    ],
    [
      'non-boolean tls_disable',
      'listener "tcp" { tls_disable = "maybe" }\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: tls_disable must be a boolean',
    ],
    [
      'non-integer max_request_size',
      'listener "tcp" {\n tls_disable = true\n max_request_size = "big"\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: max_request_size must be an integer',
    ],
    [
      'bad selector',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "600" = { "X-A" = ["a"] } }\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: custom_response_headers: invalid selector "600"',
    ],
    [
      'bad class selector',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "2x" = { "X-A" = ["a"] } }\n}\nstorage "inmem" {}',
      'invalid selector "2x"',
    ],
    [
      'header value not a list',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "default" = { "X-A" = "a" } }\n}\nstorage "inmem" {}',
      'config.hcl: listener "tcp" [0]: custom_response_headers "default": header "X-A" must be a list of strings',
    ],
    [
      'header values not strings',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "default" = { "X-A" = [1] } }\n}\nstorage "inmem" {}',
      'header "X-A" must be a list of strings',
    ],
    [
      'invalid header name',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "default" = { "X A" = ["a"] } }\n}\nstorage "inmem" {}',
      'custom_response_headers "default": "X A" is not a valid header name',
    ],
    [
      'reserved header name',
      'listener "tcp" {\n tls_disable = true\n custom_response_headers = { "default" = { "X-Service-Token" = ["a"] } }\n}\nstorage "inmem" {}',
      'header "X-Service-Token" is reserved',
    ],
    ['unknown storage type', 'listener "tcp" { tls_disable = true }\nstorage "foo" {}', 'config.hcl: unknown storage type "foo" (supported: postgresql, embedded, inmem)'],
    [
      'two storage stanzas',
      'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nstorage "embedded" { path = "x" }',
      'config.hcl: only one storage stanza is allowed (found "inmem", "embedded")',
    ],
    ['postgresql without URL', 'listener "tcp" { tls_disable = true }\nstorage "postgresql" {}', 'config.hcl: storage "postgresql": connection_url is required'],
    [
      'postgresql table not an identifier',
      'listener "tcp" { tls_disable = true }\nstorage "postgresql" {\n connection_url = "postgres://db"\n table = "x; drop"\n}',
      'storage "postgresql": table must be a SQL identifier',
    ],
    ['embedded without path', 'listener "tcp" { tls_disable = true }\nstorage "embedded" {}', 'config.hcl: storage "embedded": path is required'],
    ['storage not a block', 'listener "tcp" { tls_disable = true }\nstorage = "inmem"', 'config.hcl: storage must be a block such as storage "TYPE" { ... }'],
    ['nats without servers', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nbus "nats" {}', 'config.hcl: bus "nats": servers (or address) is required'],
    ['unknown bus', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nbus "kafka" {}', 'config.hcl: unknown bus type "kafka" (supported: nats)'],
    ...['subject_prefix', 'inbox_prefix'].flatMap((field) =>
      ['svc.prod', 'svc*', '>', 'svc prod', ''].map((prefix): [string, string, string] => [
        `${field} ${JSON.stringify(prefix)}`,
        `listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nbus "nats" {\n address = "nats://a"\n ${field} = "${prefix}"\n}`,
        `config.hcl: bus "nats": ${field} must be one or more letters, digits, "-" or "_"`,
      ]),
    ),
    [
      'bad request_timeout',
      'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nbus "nats" {\n address = "nats://a"\n request_timeout = "soon"\n}',
      'config.hcl: bus "nats": request_timeout must be a duration',
    ],
    ['redis without address', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nlocks "redis" {}', 'config.hcl: locks "redis": address is required'],
    ['unknown seal', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "gcpckms" {}', 'config.hcl: unsupported seal type "gcpckms" (supported: shamir, awskms, transit, pkcs11)'],
    ['awskms seal without kms_key_id', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "awskms" {\n}', 'config.hcl: seal "awskms": kms_key_id is required (or set SVC_AWSKMS_SEAL_KEY_ID): the id, ARN or alias (alias/...) of the KMS key'],
    ['awskms seal with a bad region', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "awskms" {\n kms_key_id = "k"\n region = "Frankfurt"\n}', 'config.hcl: seal "awskms": region must be an AWS region such as us-east-1, not "Frankfurt"'],
    ['awskms seal with a bad endpoint', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "awskms" {\n kms_key_id = "k"\n endpoint = "kms.local"\n}', 'config.hcl: seal "awskms": endpoint must be an http:// or https:// URL (or set AWS_KMS_ENDPOINT)'],
    ['awskms seal with access_key alone', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "awskms" {\n kms_key_id = "k"\n access_key = "AKIA"\n}', 'config.hcl: seal "awskms": access_key and secret_key must be given together (or neither, to use the AWS_* variables, profile or instance role)'],
    ['awskms seal with a session_token alone', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "awskms" {\n kms_key_id = "k"\n session_token = "t"\n}', 'config.hcl: seal "awskms": session_token needs access_key and secret_key (the temporary credentials it belongs to)'],
    ['two seals in force', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "shamir" {}\nseal "transit" {}', 'config.hcl: only one seal stanza is allowed (found "shamir", "transit")'],
    ['two disabled seals', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "shamir" { disabled = true }\nseal "transit" { disabled = true }', 'config.hcl: only one seal stanza may be disabled (the seal being migrated from)'],
    ['two seals of one type', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "transit" {\n address = "http://a"\n token = "t"\n key_name = "k"\n disabled = 1\n}\nseal "transit" {\n address = "http://b"\n token = "t"\n key_name = "k"\n}', 'config.hcl: the disabled seal and the seal in force are both "transit"'],
    ['a disabled shamir seal alone', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "shamir" { disabled = "true" }', 'config.hcl: a disabled shamir seal needs an auto-unseal seal stanza to migrate to'],
    ['pkcs11 seal without a token', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n pin = "1"\n key_label = "k"\n}', 'config.hcl: seal "pkcs11": give either slot or token_label'],
    ['pkcs11 seal without a key', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n pin = "1"\n slot = "0"\n}', 'config.hcl: seal "pkcs11": key_label (or key_id) is required'],
    ['pkcs11 seal without a pin', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n slot = "0"\n key_label = "k"\n}', 'config.hcl: seal "pkcs11": pin is required'],
    ['pkcs11 seal with a bad slot', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n pin = "1"\n slot = "first"\n key_label = "k"\n}', 'config.hcl: seal "pkcs11": slot must be a slot id'],
    ['pkcs11 seal with an unknown mechanism', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n pin = "1"\n slot = "0"\n key_label = "k"\n mechanism = "0x1085"\n}', 'config.hcl: seal "pkcs11": mechanism must be CKM_AES_GCM (0x1087) or CKM_RSA_PKCS_OAEP (0x0009)'],
    ['pkcs11 generate_key without a label', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "pkcs11" {\n lib = "/l.so"\n pin = "1"\n slot = "0"\n key_id = "01"\n generate_key = true\n}', 'config.hcl: seal "pkcs11": generate_key needs key_label'],
    ['transit seal without key_name', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "transit" {\n address = "http://seal:8200"\n token = "t"\n}', 'config.hcl: seal "transit": key_name is required'],
    ['transit seal with a bad address', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nseal "transit" {\n address = "seal:8200"\n token = "t"\n key_name = "k"\n}', 'config.hcl: seal "transit": address must be an http:// or https:// URL'],
    ['bad duration', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nmax_lease_ttl = "forever"', 'config.hcl: max_lease_ttl must be a duration'],
    [
      'default above max',
      'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\ndefault_lease_ttl = "2h"\nmax_lease_ttl = "1h"',
      'config.hcl: default_lease_ttl must not exceed max_lease_ttl',
    ],
    ['no workers', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nworkers = 0', 'config.hcl: workers must be between 1 and 256'],
    ['workers not a number', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nworkers = "many"', 'config.hcl: workers must be an integer'],
    ['no cache entries', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\ncache_size = 0', 'config.hcl: cache_size must be a positive number of entries (disable_cache turns the cache off)'],
    ['cache size not a number', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\ncache_size = "big"', 'config.hcl: cache_size must be an integer'],
    ['bad log level', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nlog_level = "loud"', 'config.hcl: log_level must be one of trace, debug, info, warn, error'],
    ['unknown service', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nservices = ["gateway", "mail"]', 'config.hcl: services: unknown service "mail" (known: gateway, transit)'],
    ['bad cluster_address', 'listener "tcp" {\n tls_disable = true\n cluster_address = "8201"\n}\nstorage "inmem" {}', 'cluster_address must be host:port'],
    ['bad api_addr', 'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\napi_addr = "svc:8200"', 'config.hcl: api_addr must be a URL'],
  ];

  it.each(cases)('%s', async (_name, text, message) => {
    await expectConfigError(parseConfig(text, 'hcl', 'config.hcl', process.env, KNOWN_SERVICES), message);
  });

  it('reads the client certificate settings of a TLS listener, and refuses them without TLS', async () => {
    const listener = (extra: string) => `listener "tcp" {\n tls_cert_file = "${cert}"\n tls_key_file = "${key}"\n${extra}}\nstorage "inmem" {}`;
    const required = await parseConfig(listener(` tls_require_and_verify_client_cert = true\n tls_client_ca_file = "${cert}"\n`), 'hcl', 'config.hcl');
    expect(required.listeners[0]).toMatchObject({ tlsRequireAndVerifyClientCert: true, tlsClientCaFile: cert });
    expect((await parseConfig(listener(''), 'hcl', 'config.hcl')).listeners[0]).not.toHaveProperty('tlsRequireAndVerifyClientCert');
    await expectConfigError(
      parseConfig(listener(` tls_client_ca_file = "${join(dir, 'missing.pem')}"\n`), 'hcl', 'config.hcl'),
      `listener "tcp" [0]: tls_client_ca_file "${join(dir, 'missing.pem')}" cannot be read (ENOENT)`,
    );
    await expectConfigError(
      parseConfig('listener "tcp" {\n tls_disable = true\n tls_require_and_verify_client_cert = true\n}\nstorage "inmem" {}', 'hcl', 'config.hcl'),
      'listener "tcp" [0]: tls_require_and_verify_client_cert needs TLS, but tls_disable is set',
    );
  });

  it('rejects a certificate path that is a directory', async () => {
    const sub = join(dir, 'certs');
    await mkdir(sub, { recursive: true });
    await expectConfigError(
      parseConfig(`listener "tcp" {\n tls_cert_file = "${sub}"\n tls_key_file = "${key}"\n}\nstorage "inmem" {}`, 'hcl', 'config.hcl'),
      `listener "tcp" [0]: tls_cert_file "${sub}" is not a file`,
    );
  });

  it('never puts a secret value into an error', async () => {
    const error = await parseConfig(
      'listener "tcp" { tls_disable = true }\nstorage "inmem" {}\nlocks "redis" {\n address = "r:6379"\n db = "hunter2"\n}',
      'hcl',
      'config.hcl',
    ).catch((err: Error) => err);
    expect((error as Error).message).toBe('config.hcl: locks "redis": db must be an integer');
  });
});

describe('loadConfigFile', () => {
  it('chooses the format by extension', async () => {
    const hclPath = join(dir, 'server.hcl');
    const jsonPath = join(dir, 'server.json');
    await writeFile(hclPath, minimalHcl);
    await writeFile(jsonPath, JSON.stringify({ listener: { tcp: { tls_disable: 1 } }, storage: { inmem: {} } }));
    expect((await loadConfigFile(hclPath, KNOWN_SERVICES)).storage.type).toBe('inmem');
    expect((await loadConfigFile(jsonPath, KNOWN_SERVICES)).listeners[0].tlsDisable).toBe(true);
  });

  it('names the file in its errors', async () => {
    const path = join(dir, 'broken.hcl');
    await writeFile(path, 'listener "tcp" { tls_disable = true }\n');
    await expectConfigError(loadConfigFile(path, KNOWN_SERVICES), `${path}: a storage stanza is required`);
    await expectConfigError(loadConfigFile(join(dir, 'server.yaml'), KNOWN_SERVICES), 'configuration files must end in .hcl or .json');
    await expectConfigError(loadConfigFile(join(dir, 'missing.hcl'), KNOWN_SERVICES), 'cannot read configuration file (ENOENT)');
  });
});

describe('unknown fields', () => {
  it('are warnings naming the file, the stanza and the field, in every stanza of an HCL file, without their values', async () => {
    const path = join(dir, 'typos.hcl');
    await writeFile(
      path,
      `listener "tcp" {\n  tls_disable = true\n}\nlistener "tcp" {\n  adress = "127.0.0.1:8300"\n  tls_disable = true\n}\n` +
        `storage "inmem" {}\nbus "nats" {\n  servers = ["nats://a:4222"]\n  subjet_prefix = "hunter2"\n}\n` +
        `locks "redis" {\n  address = "127.0.0.1:6379"\n  key_prefx = "svc:"\n}\n` +
        `seal "transit" {\n  address = "https://seal:8200"\n  token = "s.t"\n  key_name = "autounseal"\n  mount = "transit"\n}\nlog_levl = "debug"\n`,
    );
    const config = await loadConfigFile(path, KNOWN_SERVICES);
    expect(config.listeners[1].address).toBe(DEFAULT_ADDRESS);
    expect(config.warnings).toEqual([
      `${path}: listener "tcp" [1]: unknown field "adress" ignored`,
      `${path}: bus "nats": unknown field "subjet_prefix" ignored`,
      `${path}: locks "redis": unknown field "key_prefx" ignored`,
      `${path}: seal "transit": unknown field "mount" ignored`,
      `${path}: unknown field "log_levl" ignored`,
    ]);
    expect(config.warnings?.join()).not.toContain('hunter2');
  });

  it('are warnings in a JSON file too', async () => {
    const path = join(dir, 'typos.json');
    await writeFile(path, JSON.stringify({ listener: [{ tcp: { tls_disable: true, adress: '127.0.0.1:8300' } }], storage: { embedded: { path: dir, pth: dir } }, uii: true }));
    expect((await loadConfigFile(path, KNOWN_SERVICES)).warnings).toEqual([
      `${path}: listener "tcp" [0]: unknown field "adress" ignored`,
      `${path}: storage "embedded": unknown field "pth" ignored`,
      `${path}: unknown field "uii" ignored`,
    ]);
  });
});

describe('telemetry', () => {
  it("takes Vault's fields, and a listener's telemetry block; the push sinks' fields are warned about", async () => {
    const text =
      'listener "tcp" {\n  tls_disable = true\n  telemetry {\n    unauthenticated_metrics_access = true\n  }\n}\nstorage "inmem" {}\n' +
      'telemetry {\n  prometheus_retention_time = "30s"\n  disable_hostname = true\n  enable_hostname_label = true\n  usage_gauge_period = "5m"\n  metrics_prefix = "vault"\n  statsd_address = "statsd:8125"\n}\n';
    const config = await parseConfig(text, 'hcl', 'config.hcl', {});
    expect(config.telemetry).toEqual({ prometheusRetentionMs: 30_000, disableHostname: true, enableHostnameLabel: true, usageGaugePeriodMs: 300_000, metricsPrefix: 'vault' });
    expect(config.listeners[0].unauthenticatedMetricsAccess).toBe(true);
    expect(config.warnings).toEqual(['config.hcl: telemetry: unknown field "statsd_address" ignored']);
  });

  it('defaults to Vault\'s values with the svc prefix; usage_gauge_period = "none" and a zero retention are accepted', async () => {
    expect((await parseConfig(minimalHcl, 'hcl', 'config.hcl', {})).telemetry).toEqual(DEFAULT_TELEMETRY);
    const json = JSON.stringify({ listener: { tcp: { tls_disable: true } }, storage: { inmem: {} }, telemetry: { usage_gauge_period: 'none', prometheus_retention_time: 0 } });
    expect((await parseConfig(json, 'json', 'config.json', {})).telemetry).toMatchObject({ usageGaugePeriodMs: 0, prometheusRetentionMs: 0 });
  });

  it.each([
    ['prometheus_retention_time = "soon"', 'config.hcl: telemetry: prometheus_retention_time must be a duration such as "30s", "768h" or a number of seconds'],
    ['disable_hostname = "maybe"', 'config.hcl: telemetry: disable_hostname must be a boolean (true or false)'],
    ['usage_gauge_period = "0s"', 'config.hcl: telemetry: usage_gauge_period must be a positive duration such as "10m", or "none"'],
    ['usage_gauge_period = "often"', 'config.hcl: telemetry: usage_gauge_period must be a duration such as "30s", "768h" or a number of seconds'],
    ['metrics_prefix = "my-prefix"', 'config.hcl: telemetry: metrics_prefix must be letters, digits and underscores, not starting with a digit'],
  ])('refuses %s naming the field', async (field, message) => {
    await expectConfigError(parseConfig(`${minimalHcl}telemetry {\n  ${field}\n}\n`, 'hcl', 'config.hcl', {}), message);
  });

  it("refuses a listener's telemetry block with a bad value, and warns of its unknown fields", async () => {
    const listener = (body: string) => `listener "tcp" {\n  tls_disable = true\n  telemetry {\n    ${body}\n  }\n}\nstorage "inmem" {}\n`;
    await expectConfigError(
      parseConfig(listener('unauthenticated_metrics_access = "yes please"'), 'hcl', 'config.hcl', {}),
      'config.hcl: listener "tcp" [0]: telemetry: unauthenticated_metrics_access must be a boolean (true or false)',
    );
    expect((await parseConfig(listener('unauthenticated_metrics = true'), 'hcl', 'config.hcl', {})).warnings).toEqual([
      'config.hcl: listener "tcp" [0]: telemetry: unknown field "unauthenticated_metrics" ignored',
    ]);
  });
});

describe('replication', () => {
  it("takes the log shipper's limits and warns of unknown fields; absent, the defaults apply", async () => {
    expect((await parseConfig(minimalHcl, 'hcl', 'config.hcl', {})).replication).toBeUndefined();
    const config = await parseConfig(`${minimalHcl}replication {\n  log_shipper_buffer_length = 64\n  log_shipper_buffer_size = 1048576\n  resolver_discover_servers = true\n}\n`, 'hcl', 'config.hcl', {});
    expect(config.replication).toEqual({ logShipperBufferLength: 64, logShipperBufferSize: 1_048_576 });
    expect(config.warnings).toEqual(['config.hcl: replication: unknown field "resolver_discover_servers" ignored']);
  });

  it.each([
    ['log_shipper_buffer_length = 0', 'config.hcl: replication: log_shipper_buffer_length must be a positive integer'],
    ['log_shipper_buffer_size = "big"', 'config.hcl: replication: log_shipper_buffer_size must be an integer'],
  ])('refuses %s naming the field', async (field, message) => {
    await expectConfigError(parseConfig(`${minimalHcl}replication {\n  ${field}\n}\n`, 'hcl', 'config.hcl', {}), message);
  });
});

describe('devConfig', () => {
  it('is all-in-one: one plain-HTTP listener, in-memory storage, no bus or locks', () => {
    const config = devConfig({ listenAddress: '127.0.0.1:8250' });
    expect(config.listeners).toHaveLength(1);
    expect(config.listeners[0]).toMatchObject({ address: '127.0.0.1:8250', tlsDisable: true });
    expect(config.storage).toEqual({ type: 'inmem', options: {} });
    expect(config.bus).toBeUndefined();
    expect(config.locks).toBeUndefined();
    expect(devConfig().listeners[0].address).toBe('127.0.0.1:8200');
  });
});

describe('secrets from the environment', () => {
  const distributed = `
storage "postgresql" { connection_url = "postgres://svc@db:5432/svc" }
bus "nats" {
  servers = ["nats://nats:4222"]
  user    = "gateway"
}
locks "redis" { address = "redis:6379" }
`;

  it('SVC_PG_CONNECTION_URL, SVC_NATS_PASSWORD and SVC_REDIS_PASSWORD beat the file', async () => {
    const config = await parseConfig(distributed, 'hcl', 'gateway.hcl', {
      SVC_PG_CONNECTION_URL: 'postgres://svc:pg-secret@db:5432/svc',
      SVC_NATS_PASSWORD: 'nats-secret',
      SVC_REDIS_PASSWORD: 'redis-secret',
    });
    expect(config.storage.options.connection_url).toBe('postgres://svc:pg-secret@db:5432/svc');
    expect(config.bus).toMatchObject({ user: 'gateway', password: 'nats-secret' });
    expect(config.locks?.password).toBe('redis-secret');
    expect(config.warnings).toEqual([]);
  });

  it('supply a field the file leaves out, in JSON too', async () => {
    const json = JSON.stringify({ storage: { postgresql: {} } });
    const config = await parseConfig(json, 'json', 'service.json', { SVC_PG_CONNECTION_URL: 'postgres://svc:s@db/svc' });
    expect(config.storage.options.connection_url).toBe('postgres://svc:s@db/svc');
  });

  it('leave the file alone when unset or empty', async () => {
    const config = await parseConfig(distributed, 'hcl', 'gateway.hcl', { SVC_NATS_PASSWORD: '' });
    expect(config.storage.options.connection_url).toBe('postgres://svc@db:5432/svc');
    expect(config.bus?.password).toBeUndefined();
    expect(config.locks?.password).toBeUndefined();
  });

  it('are validated like the file, and a variable without its stanza is a warning', async () => {
    const noUser = 'storage "inmem" {}\nbus "nats" { servers = ["nats://nats:4222"] }';
    await expectConfigError(parseConfig(noUser, 'hcl', 'service.hcl', { SVC_NATS_PASSWORD: 'nats-secret' }), 'password requires user');
    const config = await parseConfig(minimalHcl, 'hcl', 'server.hcl', { SVC_PG_CONNECTION_URL: 'postgres://svc:s@db/svc', SVC_REDIS_PASSWORD: 'r' });
    expect(config.storage.type).toBe('inmem');
    expect(config.warnings).toEqual([
      'server.hcl: SVC_PG_CONNECTION_URL is set but there is no storage "postgresql" stanza; ignored',
      'server.hcl: SVC_REDIS_PASSWORD is set but there is no locks "redis" stanza; ignored',
    ]);
    expect(config.warnings?.join()).not.toMatch(/postgres:\/\/|:s@/);
  });
});
