/**
 * The deployment files deploy, as far as can be checked without a container engine: docker-compose
 * and the kustomization (deploy/) run every service app with the same commands the tests run, with
 * health checks; everything they reference exists (secrets and config maps with their keys, mounted
 * files, environment files); the rendered manifests validate against the Kubernetes schemas;
 * deploy/make-secrets.sh makes every secret; and a gateway and every engine service, run with the
 * deployment's configurations, files and secrets against NATS (deploy/nats/nats.conf: TLS with client
 * certificates) and Redis run as compose runs them, form a working cluster.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect as natsConnect } from 'nats';
import { parse, parseAllDocuments } from 'yaml';
import * as coreModels from 'kubernetes-models/v1';
import * as appsModels from 'kubernetes-models/apps/v1';
import * as networkingModels from 'kubernetes-models/networking.k8s.io/v1';
import * as rbacModels from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import type { IContainer, IPodSpec, IService } from 'kubernetes-models/v1';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { parseConfig, parseHcl } from '@svc/config';
import { api, createDatabase, dropDatabase, eventually, initAndUnseal, startServerProcess, type ServerProcess } from '@svc/testing';

const root = path.resolve(__dirname, '..');
const deployDir = path.join(root, 'deploy');
/** Apps that are not a server process: the CLI, and the web UI (files the gateway serves). */
const CLIENT_APPS = ['cli', 'ui'];
const serviceApps = readdirSync(path.join(root, 'apps')).filter((app) => !CLIENT_APPS.includes(app)).sort();
/** Apps that run the core (gateway.hcl, the gateways' NATS user); the rest are engine and worker services (service.hcl). */
const CORE_APPS = ['gateway', 'replication'];
const engineServiceApps = serviceApps.filter((app) => !CORE_APPS.includes(app));
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
const image = `secrets-service:${version}`;
const configNames = ['gateway', 'service'] as const;

const read = (...parts: string[]) => readFileSync(path.join(root, ...parts), 'utf8');

// ---- deploy/make-secrets.sh ------------------------------------------------------------------

const madeFiles = [
  'ca.crt', 'ca.key', 'cluster.key', 'gateway.env', 'nats-client.crt', 'nats-client.key', 'nats-gateway-password', 'nats-server.crt',
  'nats-server.key', 'nats-service-password', 'nats.env', 'postgres-password', 'postgres.env', 'redis-password', 'redis.env', 'service.env',
];
const certificates = ['nats-server.crt', 'nats-client.crt'];

function makeSecrets(dir: string): string {
  return execFileSync('sh', [path.join(deployDir, 'make-secrets.sh'), dir], { encoding: 'utf8' });
}

function contents(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((file) => [file, readFileSync(path.join(dir, file), 'utf8')]));
}

function readEnvFile(file: string): Record<string, string> {
  const lines = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
  return Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}

let workDir: string;
/** make-secrets.sh's output for the rest of the suite, standing in for the default deploy/secrets. */
let secretsDir: string;

beforeAll(() => {
  workDir = mkdtempSync(path.join(tmpdir(), 'svc-deploy-'));
  secretsDir = path.join(workDir, 'secrets');
  makeSecrets(secretsDir);
});

afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** A path of the repository, with deploy/secrets/ read from the suite's secrets directory. */
function repositoryPath(relative: string): string {
  const inSecrets = path.relative(path.join('deploy', 'secrets'), relative);
  return inSecrets.startsWith('..') ? path.join(root, relative) : path.join(secretsDir, inSecrets);
}

function opensslText(certificate: string): string {
  return execFileSync('openssl', ['x509', '-noout', '-text', '-in', certificate], { encoding: 'utf8' });
}

/** Whether `ca` verifies `certificate`, for any use or only as a TLS server's or client's. */
function verifies(certificate: string, ca: string, purpose?: 'sslserver' | 'sslclient'): boolean {
  try {
    execFileSync('openssl', ['verify', ...(purpose ? ['-purpose', purpose] : []), '-CAfile', ca, certificate], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('deploy/make-secrets.sh', () => {
  test('makes every secret, readable by its owner only', () => {
    expect(readdirSync(secretsDir).sort()).toEqual(madeFiles);
    expect(statSync(secretsDir).mode & 0o777).toBe(0o700);
    for (const file of madeFiles) expect([file, statSync(path.join(secretsDir, file)).mode & 0o777]).toEqual([file, 0o600]);
    const secret = (file: string) => readFileSync(path.join(secretsDir, file), 'utf8');
    for (const password of ['postgres-password', 'nats-gateway-password', 'nats-service-password', 'redis-password']) {
      expect(secret(password)).toMatch(/^[a-p]{48}$/);
    }
    expect(new Set(['postgres-password', 'nats-gateway-password', 'nats-service-password', 'redis-password'].map(secret)).size).toBe(4);
    expect(Buffer.from(secret('cluster.key'), 'base64')).toHaveLength(32);

    const ca = path.join(secretsDir, 'ca.crt');
    const server = path.join(secretsDir, 'nats-server.crt');
    const client = path.join(secretsDir, 'nats-client.crt');
    // Each certificate serves only its side of a TLS connection.
    expect([verifies(server, ca, 'sslserver'), verifies(server, ca, 'sslclient')]).toEqual([true, false]);
    expect([verifies(client, ca, 'sslclient'), verifies(client, ca, 'sslserver')]).toEqual([true, false]);
    const names = /Subject Alternative Name:\s*\n\s*(.*)/.exec(opensslText(server))![1].split(', ');
    expect(names).toEqual(expect.arrayContaining(['DNS:nats', 'DNS:nats.secrets-service.svc', 'DNS:localhost']));
    expect(/Extended Key Usage:\s*\n\s*(.*)/.exec(opensslText(client))![1]).toBe('TLS Web Client Authentication');
  });

  test('writes the environment files from the passwords', () => {
    const secret = (file: string) => readFileSync(path.join(secretsDir, file), 'utf8');
    const redis = secret('redis-password');
    const url = `postgres://svc:${secret('postgres-password')}@postgres:5432/svc`;
    for (const [app, user] of [['gateway', 'gateway'], ['service', 'service']]) {
      expect(readEnvFile(path.join(secretsDir, `${app}.env`))).toEqual({
        SVC_PG_CONNECTION_URL: url,
        SVC_NATS_PASSWORD: secret(`nats-${user}-password`),
        SVC_REDIS_PASSWORD: redis,
      });
    }
    expect(readEnvFile(path.join(secretsDir, 'nats.env'))).toEqual({
      NATS_GATEWAY_PASSWORD: secret('nats-gateway-password'),
      NATS_SERVICE_PASSWORD: secret('nats-service-password'),
    });
    expect(readEnvFile(path.join(secretsDir, 'postgres.env'))).toEqual({ POSTGRES_PASSWORD: secret('postgres-password') });
    expect(readEnvFile(path.join(secretsDir, 'redis.env'))).toEqual({ REDIS_PASSWORD: redis, REDISCLI_AUTH: redis });
  });

  test('keeps what exists, replaces what was deleted, and issues the certificates again for a new CA', () => {
    const dir = path.join(workDir, 'rerun');
    makeSecrets(dir);
    const first = contents(dir);
    expect(makeSecrets(dir)).toBe('');
    expect(contents(dir)).toEqual(first);

    unlinkSync(path.join(dir, 'nats-service-password'));
    expect(makeSecrets(dir)).toBe(`made ${dir}/nats-service-password\n`);
    const second = contents(dir);
    const replaced = second['nats-service-password'];
    expect(replaced).not.toBe(first['nats-service-password']);
    expect(readEnvFile(path.join(dir, 'service.env')).SVC_NATS_PASSWORD).toBe(replaced);
    expect(readEnvFile(path.join(dir, 'nats.env')).NATS_SERVICE_PASSWORD).toBe(replaced);
    const unchanged = madeFiles.filter((file) => !['nats-service-password', 'service.env', 'nats.env'].includes(file));
    for (const file of unchanged) expect([file, second[file]]).toEqual([file, first[file]]);

    // A certificate whose key is gone is issued again, with a new key; the other one is kept.
    unlinkSync(path.join(dir, 'nats-client.key'));
    expect(makeSecrets(dir)).toBe(`made ${dir}/nats-client.crt and ${dir}/nats-client.key\n`);
    const third = contents(dir);
    expect(third['nats-client.crt']).not.toBe(second['nats-client.crt']);
    expect(third['nats-client.key']).not.toBe(second['nats-client.key']);
    expect(verifies(path.join(dir, 'nats-client.crt'), path.join(dir, 'ca.crt'), 'sslclient')).toBe(true);
    expect(third['nats-server.crt']).toBe(second['nats-server.crt']);

    unlinkSync(path.join(dir, 'ca.key'));
    makeSecrets(dir);
    const fourth = contents(dir);
    expect(fourth['ca.crt']).not.toBe(third['ca.crt']);
    for (const certificate of certificates) {
      expect([certificate, fourth[certificate] !== third[certificate]]).toEqual([certificate, true]);
      expect([certificate, verifies(path.join(dir, certificate), path.join(dir, 'ca.crt'))]).toEqual([certificate, true]);
    }
    expect(fourth['cluster.key']).toBe(third['cluster.key']);
  });
});

// ---- the server configurations and nats.conf ---------------------------------------------------

/** The fields of a configuration's bus stanza as written, before the parser sees them. */
function rawBus(name: string): Record<string, unknown> {
  const raw = parseHcl(read('deploy', 'config', `${name}.hcl`), `${name}.hcl`) as { bus: Array<{ nats: Array<Record<string, unknown>> }> };
  return raw.bus[0].nats[0];
}

/** Files the configurations name, which every deployment must provide at these paths. */
function filesNamedBy(name: string): string[] {
  const bus = rawBus(name);
  return [`/etc/svc/${name}.hcl`, ...['tls_ca_file', 'tls_cert_file', 'tls_key_file', 'cluster_key_file'].map((field) => String(bus[field]))];
}

/** The files of keys a configuration names, which a deployment keeps in secrets only. */
function keyFilesNamedBy(name: string): string[] {
  const bus = rawBus(name);
  return [String(bus.tls_key_file), String(bus.cluster_key_file)];
}

const natsConf = () => read('deploy', 'nats', 'nats.conf');
const natsTlsFiles = () => [...natsConf().matchAll(/"(\/etc\/nats\/tls\/[^"]+)"/g)].map((match) => match[1]);
/** nats.conf's entry for one user: from its `user:` line to the next user's. */
function natsUser(user: string): string {
  const entry = natsConf().split(/^\s*user: /m).find((part) => part.startsWith(`${user}\n`));
  expect([user, entry !== undefined]).toEqual([user, true]);
  return entry!;
}

describe('the server configurations', () => {
  test.each(configNames)('%s.hcl parses with the server\'s parser and the passwords make-secrets.sh made', async (name) => {
    const environment = readEnvFile(path.join(secretsDir, `${name}.env`));
    const config = await parseConfig(read('deploy', 'config', `${name}.hcl`), 'hcl', `${name}.hcl`, environment);
    expect(config.storage).toMatchObject({ type: 'postgresql', options: { connection_url: environment.SVC_PG_CONNECTION_URL } });
    const nats = readEnvFile(path.join(secretsDir, 'nats.env'));
    expect(config.bus).toMatchObject({
      type: 'nats',
      user: name,
      password: nats[`NATS_${name.toUpperCase()}_PASSWORD`],
      clusterKeyFile: '/etc/svc/cluster.key',
      tls: { caFile: '/etc/svc/tls/ca.crt', certFile: '/etc/svc/tls/client.crt', keyFile: '/etc/svc/tls/client.key' },
    });
    expect(config.bus?.servers.map((server) => new URL(server).protocol)).toEqual(['tls:']);
    expect(config.locks).toMatchObject({ type: 'redis', password: readFileSync(path.join(secretsDir, 'redis-password'), 'utf8') });
    expect(config.warnings).toEqual([]);
  });

  test.each(configNames)('%s.hcl reads replies on the only inbox nats.conf lets its user subscribe to', async (name) => {
    const config = await parseConfig(read('deploy', 'config', `${name}.hcl`), 'hcl', `${name}.hcl`, {});
    const inboxes = [...natsUser(config.bus!.user!).matchAll(/"(_INBOX[^"]*)"/g)].map((match) => match[1]);
    expect(inboxes).toEqual([`${config.bus!.inboxPrefix}.>`]);
  });

  test('nats.conf lets the gateways send, and the services take, requests, presence checks and cache invalidations of every engine service app', () => {
    const subjects = { gateway: ['request', 'presence', 'invalidate'], service: ['request', 'presence', 'invalidate'] };
    for (const app of engineServiceApps) {
      for (const [user, kinds] of Object.entries(subjects)) {
        for (const kind of kinds) expect([user, `svc.${app}.${kind}`, natsUser(user).includes(`"svc.${app}.${kind}"`)]).toEqual([user, `svc.${app}.${kind}`, true]);
      }
    }
  });

  test('nats.conf lets the gateways\' user call and serve the replication service, and no service', () => {
    const [publish, subscribe] = natsUser('gateway').split(/subscribe:/);
    expect([publish.includes('"svc.replication.owner"'), subscribe.includes('"svc.replication.owner"')]).toEqual([true, true]);
    expect(natsUser('service')).not.toContain('svc.replication.');
  });

  test('nats.conf takes its users\' passwords from nats.env and its TLS files from /etc/nats/tls', () => {
    const passwords = [...natsConf().matchAll(/password:\s*\$(\w+)/g)].map((match) => match[1]);
    expect(passwords.sort()).toEqual(Object.keys(readEnvFile(path.join(secretsDir, 'nats.env'))).sort());
    expect(natsTlsFiles().sort()).toEqual(['/etc/nats/tls/ca.crt', '/etc/nats/tls/server.crt', '/etc/nats/tls/server.key']);
    // Clients present a certificate the CA signed: make-secrets.sh issues one for the apps.
    expect(natsConf()).toMatch(/^\s*verify: true$/m);
  });
});

// ---- docker-compose.yml --------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  entrypoint?: string[];
  command?: string[];
  env_file?: string | string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  networks?: Record<string, { aliases?: string[] } | null>;
}

const compose = () => parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };

/** `svc server -config=... -service=NAME`: the NAME, after checking the rest of the command. */
function serverApp(args: string[] | undefined): string | undefined {
  expect(args?.[0]).toBe('server');
  expect(args!.some((arg) => /^-config=\/etc\/svc\/\w+\.hcl$/.test(arg))).toBe(true);
  return args!.find((arg) => arg.startsWith('-service='))?.slice('-service='.length);
}

/** Bind mounts (`./source:/target[:ro]`) as target -> source path; named volumes are left out. */
function bindMounts(service: ComposeService): Map<string, string> {
  const binds = (service.volumes ?? []).map((volume) => volume.split(':')).filter(([source]) => source.startsWith('./'));
  return new Map(binds.map(([source, target]) => [target, repositoryPath(source)]));
}

/** Runs compose's etc-svc step here, with its mounts' sources and `dir` in place of the volume. */
function installEtcSvc(dir: string): string {
  const step = compose().services['etc-svc'];
  expect(step.volumes).toContain('etc-svc:/etc/svc');
  mkdirSync(dir);
  const places = [...bindMounts(step), ['/etc/svc', dir]].sort(([a], [b]) => b.length - a.length);
  const command = places.reduce((text, [target, source]) => text.split(target).join(source), step.command![0]);
  execFileSync(step.entrypoint![0], [...step.entrypoint!.slice(1), command]);
  return dir;
}

describe('docker-compose.yml', () => {
  const apps = () => Object.entries(compose().services).filter(([, service]) => service.image === image && !service.entrypoint);

  test('runs two gateways and every service app with svc server -service, each with a health check', () => {
    const started = apps().map(([, service]) => serverApp(service.command));
    expect(started.filter((app) => app === 'gateway')).toHaveLength(2);
    expect([...new Set(started)].sort()).toEqual(serviceApps);
    for (const [name, service] of Object.entries(compose().services)) {
      if (name !== 'etc-svc') expect([name, service.healthcheck?.test.length]).toEqual([name, expect.any(Number)]);
    }
  });

  test('every file it mounts or reads is in the repository or made by make-secrets.sh', () => {
    const services = Object.entries(compose().services);
    const files = services.flatMap(([, service]) => [
      ...bindMounts(service).values(),
      ...[service.env_file ?? []].flat().map(repositoryPath),
    ]);
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) expect([file, existsSync(file)]).toEqual([file, true]);
  });

  test('etc-svc gives the apps\' user every file their configurations name', () => {
    const etcSvc = installEtcSvc(path.join(workDir, 'etc-svc'));
    for (const file of configNames.flatMap(filesNamedBy)) {
      const installed = statSync(path.join(etcSvc, path.relative('/etc/svc', file)));
      expect([file, installed.uid, installed.mode & 0o777]).toEqual([file, 10001, 0o400]);
    }
    for (const [, service] of apps()) expect(service.volumes).toContain('etc-svc:/etc/svc:ro');
  });

  test('NATS gets nats.conf and the TLS files it names; each app its environment file', () => {
    const nats = compose().services.nats;
    expect(nats.command).toEqual(expect.arrayContaining(['-c', '/etc/nats/nats.conf']));
    const mounted = bindMounts(nats);
    expect(mounted.get('/etc/nats/nats.conf')).toBe(path.join(deployDir, 'nats', 'nats.conf'));
    for (const file of natsTlsFiles()) expect([file, mounted.has(file)]).toEqual([file, true]);
    expect(nats.env_file).toBe('deploy/secrets/nats.env');
    for (const [, service] of apps()) {
      const config = service.command!.find((arg) => arg.startsWith('-config='))!;
      expect(service.env_file).toBe(`deploy/secrets/${path.basename(config, '.hcl')}.env`);
    }
  });

  test('api_addr names a host that exists in compose', async () => {
    const hosts = Object.entries(compose().services).flatMap(([name, service]) => [
      name,
      ...Object.values(service.networks ?? {}).flatMap((network) => network?.aliases ?? []),
    ]);
    const config = await parseConfig(read('deploy', 'config', 'gateway.hcl'), 'hcl', 'gateway.hcl', {});
    expect(hosts).toContain(new URL(config.apiAddr!).hostname);
  });
});

// ---- the kustomization -----------------------------------------------------------------------------

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: { template?: { metadata?: { labels?: Record<string, string> }; spec: IPodSpec } };
}

interface Generator {
  name: string;
  files?: string[];
  envs?: string[];
}

interface Kustomization {
  namespace: string;
  resources: string[];
  images: Array<{ name: string; newName?: string; newTag: string }>;
  configMapGenerator: Generator[];
  secretGenerator: Generator[];
}

/**
 * What `kubectl kustomize deploy` makes of the features deploy/kustomization.yaml uses (there is no
 * kustomize binary here): its resources in its namespace with its images, and the generated config
 * maps and secrets (under their plain names: kustomize adds a hash and rewrites every reference).
 */
/** Kinds kustomize leaves without a namespace. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

function renderKustomization(): KubeObject[] {
  const kustomization = parse(read('deploy', 'kustomization.yaml')) as Kustomization;
  const generatorEntries = (generator: Generator): Record<string, string> => {
    const entries: Record<string, string> = {};
    for (const file of generator.files ?? []) {
      const [key, source] = file.includes('=') ? file.split('=') : [path.basename(file), file];
      entries[key] = readFileSync(repositoryPath(path.join('deploy', source)), 'utf8');
    }
    for (const envFile of generator.envs ?? []) Object.assign(entries, readEnvFile(repositoryPath(path.join('deploy', envFile))));
    return entries;
  };
  const configMaps = kustomization.configMapGenerator.map((generator) => ({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data: generatorEntries(generator),
  }));
  const secrets = kustomization.secretGenerator.map((generator) => ({
    apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: generator.name },
    data: Object.fromEntries(Object.entries(generatorEntries(generator)).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  }));
  const resources = kustomization.resources.flatMap((file) =>
    parseAllDocuments(read('deploy', file)).map((document) => document.toJS() as KubeObject),
  );
  const rendered: KubeObject[] = [...resources, ...configMaps, ...secrets];
  for (const object of rendered) {
    if (!CLUSTER_SCOPED.has(object.kind)) object.metadata.namespace = kustomization.namespace;
    for (const container of podSpec(object)?.containers ?? []) {
      const replacement = kustomization.images.find((entry) => entry.name === container.image);
      if (replacement) container.image = `${replacement.newName ?? replacement.name}:${replacement.newTag}`;
    }
  }
  return rendered;
}

function podSpec(object: KubeObject): IPodSpec | undefined {
  return object.spec?.template?.spec;
}

const workloads = (rendered: KubeObject[]) => rendered.filter((object) => podSpec(object) !== undefined);

function podLabels(rendered: KubeObject[], workload: string): Record<string, string> | undefined {
  return workloads(rendered).find((object) => object.metadata.name === workload)?.spec?.template?.metadata?.labels;
}

type Model = new (data: unknown) => { validate(): void };
const models: Record<string, Record<string, Model>> = {
  v1: coreModels as unknown as Record<string, Model>,
  'apps/v1': appsModels as unknown as Record<string, Model>,
  'networking.k8s.io/v1': networkingModels as unknown as Record<string, Model>,
  'rbac.authorization.k8s.io/v1': rbacModels as unknown as Record<string, Model>,
};

/** Every volume path a container sees, as mount path + item path -> the source's name and key. */
function mountedFiles(spec: IPodSpec, container: IContainer): Map<string, { kind: string; name: string; key: string }> {
  const files = new Map<string, { kind: string; name: string; key: string }>();
  for (const mount of container.volumeMounts ?? []) {
    const volume = spec.volumes?.find((candidate) => candidate.name === mount.name);
    const sources = volume?.projected?.sources ?? [{ configMap: volume?.configMap, secret: volume?.secret && { ...volume.secret, name: volume.secret.secretName } }];
    for (const source of sources) {
      for (const [kind, reference] of [['ConfigMap', source.configMap], ['Secret', source.secret]] as const) {
        for (const item of reference?.items ?? []) files.set(path.posix.join(mount.mountPath, item.path), { kind, name: reference!.name!, key: item.key });
      }
    }
  }
  return files;
}

describe('the kustomization (deploy/kustomization.yaml)', () => {
  test('renders manifests that validate against the Kubernetes schemas, all in its namespace', () => {
    const rendered = renderKustomization();
    expect(rendered.map((object) => object.kind)).toEqual(expect.arrayContaining(['Namespace', 'StatefulSet', 'Deployment', 'Service', 'ConfigMap', 'Secret']));
    for (const object of rendered) {
      const model = models[object.apiVersion]?.[object.kind];
      expect([object.kind, object.metadata.name, model !== undefined]).toEqual([object.kind, object.metadata.name, true]);
      expect(() => new model(object).validate()).not.toThrow();
      expect(object.metadata.namespace).toBe(CLUSTER_SCOPED.has(object.kind) ? undefined : 'secrets-service');
    }
  });

  test('every Secret and ConfigMap a pod references exists, with the keys it references', () => {
    const rendered = renderKustomization();
    const keysOf = (kind: string, name: string) => {
      const found = rendered.find((object) => object.kind === kind && object.metadata.name === name);
      expect([kind, name, found !== undefined]).toEqual([kind, name, true]);
      return Object.keys(found!.data ?? {});
    };
    let references = 0;
    for (const workload of workloads(rendered)) {
      const spec = podSpec(workload)!;
      for (const container of spec.containers) {
        const environment = new Set<string>();
        for (const source of container.envFrom ?? []) {
          const [kind, name] = source.secretRef ? ['Secret', source.secretRef.name!] : ['ConfigMap', source.configMapRef!.name!];
          for (const key of keysOf(kind, name)) environment.add(key);
          references++;
        }
        for (const variable of container.env ?? []) {
          const secret = variable.valueFrom?.secretKeyRef;
          if (secret) expect(keysOf('Secret', secret.name!)).toContain(secret.key);
          environment.add(variable.name);
        }
        for (const { kind, name, key } of mountedFiles(spec, container).values()) {
          expect([kind, name, keysOf(kind, name)]).toEqual([kind, name, expect.arrayContaining([key])]);
          references++;
        }
        // Kubernetes fills $(NAME) in args from the container's environment, or leaves it as is.
        for (const [, variable] of (container.args ?? []).join(' ').matchAll(/\$\((\w+)\)/g)) expect(environment).toContain(variable);
      }
    }
    expect(references).toBeGreaterThan(15);
  });

  test('deploys every service app with the same commands, probes, resources and a restricted security context', () => {
    const rendered = renderKustomization();
    const apps = workloads(rendered).filter((object) => podSpec(object)!.containers[0].image === image);
    expect(apps.map((object) => serverApp(podSpec(object)!.containers[0].args)).sort()).toEqual(serviceApps);
    for (const workload of workloads(rendered)) {
      const spec = podSpec(workload)!;
      expect([workload.metadata.name, spec.securityContext?.runAsNonRoot, spec.securityContext?.seccompProfile?.type]).toEqual([workload.metadata.name, true, 'RuntimeDefault']);
      for (const container of spec.containers) {
        expect([container.name, container.securityContext]).toEqual([
          container.name,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        ]);
        expect(container.resources?.requests).toBeDefined();
        expect(container.resources?.limits?.memory).toBeDefined();
        const probes = [container.readinessProbe, container.livenessProbe];
        expect([container.name, probes.every((probe) => Boolean(probe?.exec ?? probe?.httpGet ?? probe?.tcpSocket))]).toEqual([container.name, true]);
      }
    }
  });

  test('a sealed or uninitialized gateway (or replication service) stays in its Service and alive; engine services probe their bus connection', () => {
    const rendered = renderKustomization();
    const container = (name: string) => podSpec(rendered.find((object) => object.metadata.name === name && podSpec(object))!)!.containers[0];
    for (const app of CORE_APPS) {
      const core = container(app);
      for (const probe of [core.readinessProbe, core.livenessProbe]) {
        const { pathname, searchParams } = new URL(String(probe?.httpGet?.path), 'http://gateway');
        expect([app, pathname]).toEqual([app, '/v1/sys/health']);
        expect(['standbyok', 'sealedcode', 'uninitcode'].map((name) => searchParams.get(name))).toEqual(['true', '204', '204']);
      }
    }
    // One replication service, restarted by Kubernetes; during a rollout the lease keeps the new pod standing by until the old one stops.
    const replication = rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'replication') as unknown as { spec: { replicas: number } };
    expect(replication.spec.replicas).toBe(1);
    expect(container('replication').ports).toContainEqual({ name: 'cluster', containerPort: 8201 });
    const service = rendered.find((object) => object.kind === 'Service' && object.metadata.name === 'gateway') as unknown as IService;
    expect(podLabels(rendered, 'gateway')).toMatchObject(service.spec!.selector!);
    // Engine services: their health listener (service.hcl), ready and alive while the bus link is up.
    const healthListener = /listener "tcp" \{\s*address\s*= "0\.0\.0\.0:(\d+)"/.exec(read('deploy', 'config', 'service.hcl'));
    expect(healthListener?.[1]).toBe(String(SERVICE_HEALTH_PORT));
    for (const app of engineServiceApps) {
      const engine = container(app);
      expect(engine.ports).toContainEqual({ name: 'health', containerPort: SERVICE_HEALTH_PORT });
      for (const probe of [engine.readinessProbe, engine.livenessProbe]) expect([app, probe?.httpGet]).toEqual([app, { path: SERVICE_HEALTH_PROBE, port: 'health' }]);
    }
  });

  test('the apps and NATS see every file their configurations name, readable by their user, keys from Secrets', () => {
    const rendered = renderKustomization();
    let keyFiles = 0;
    for (const workload of workloads(rendered)) {
      const spec = podSpec(workload)!;
      const [container] = spec.containers;
      const config = container.args?.find((arg) => arg.startsWith('-config='));
      const configName = config && path.basename(config.slice('-config='.length), '.hcl');
      const needed = configName ? filesNamedBy(configName) : container.name === 'nats' ? ['/etc/nats/nats.conf', ...natsTlsFiles()] : [];
      const keys = configName ? keyFilesNamedBy(configName) : container.name === 'nats' ? ['/etc/nats/tls/server.key'] : [];
      const mounted = mountedFiles(spec, container);
      for (const file of needed) expect([container.name, file, mounted.has(file)]).toEqual([container.name, file, true]);
      for (const file of keys) expect([container.name, file, mounted.get(file)?.kind]).toEqual([container.name, file, 'Secret']);
      keyFiles += keys.length;
      for (const volume of spec.volumes ?? []) {
        const mode = volume.projected?.defaultMode;
        if (mode !== undefined) expect([volume.name, mode & 0o040, spec.securityContext?.fsGroup]).toEqual([volume.name, 0o040, spec.securityContext?.runAsGroup]);
      }
    }
    // Two per app (bus client key, cluster key), and NATS's server key.
    expect(keyFiles).toBe(2 * serviceApps.length + 1);
  });

  test('only the auth-cloud pods carry a service-account token, and it may review others\' tokens (the kubernetes auth method)', () => {
    const rendered = renderKustomization();
    const withToken = workloads(rendered).filter((workload) => podSpec(workload)!.automountServiceAccountToken !== false);
    expect(withToken.map((workload) => [workload.metadata.name, podSpec(workload)!.serviceAccountName])).toEqual([['auth-cloud', 'auth-cloud']]);
    const account = rendered.find((object) => object.kind === 'ServiceAccount' && object.metadata.name === 'auth-cloud');
    expect(account?.metadata.namespace).toBe('secrets-service');
    const binding = rendered.find((object) => object.kind === 'ClusterRoleBinding') as unknown as { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] };
    expect(binding.roleRef).toMatchObject({ kind: 'ClusterRole', name: 'system:auth-delegator' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'auth-cloud', namespace: 'secrets-service' }]);
  });

  test('only the service apps may reach PostgreSQL, NATS and Redis', () => {
    const rendered = renderKustomization();
    const [policy] = rendered.filter((object) => object.kind === 'NetworkPolicy') as unknown as INetworkPolicy[];
    const inValues = (selector: NonNullable<INetworkPolicy['spec']>['podSelector'] | undefined) => selector?.matchExpressions?.find((expression) => expression.key === 'app')?.values ?? [];
    expect(inValues(policy.spec?.podSelector).sort()).toEqual(['nats', 'postgres', 'redis']);
    const [rule] = policy.spec!.ingress!;
    expect(inValues(rule.from![0].podSelector).sort()).toEqual(serviceApps);
    for (const app of [...serviceApps, 'postgres', 'nats', 'redis']) expect([app, podLabels(rendered, app)?.app]).toEqual([app, app]);
    // The backends' ports: the gateways' and the replication service's Services are reached from outside.
    const ports = rendered.filter((object) => object.kind === 'Service' && !CORE_APPS.includes(object.metadata.name))
      .flatMap((object) => (object as unknown as IService).spec!.ports!.map((port) => port.port));
    expect(rule.ports!.map((port) => port.port).sort()).toEqual(ports.sort());
  });

  test('api_addr names the gateways\' Service', async () => {
    const config = await parseConfig(read('deploy', 'config', 'gateway.hcl'), 'hcl', 'gateway.hcl', {});
    const services = renderKustomization().filter((object) => object.kind === 'Service').map((object) => object.metadata.name);
    expect(services).toContain(new URL(config.apiAddr!).hostname);
    expect(new URL(config.apiAddr!).port).toBe('8200');
  });
});

// ---- the image -----------------------------------------------------------------------------------

describe('the image', () => {
  test('compose and Kubernetes run the image the documented build makes', () => {
    const images = new Set(workloads(renderKustomization()).flatMap((object) => podSpec(object)!.containers.map((container) => container.image)));
    expect(images).toContain(image);
    expect(new Set(Object.values(compose().services).map((service) => service.image))).toContain(image);
    expect([...images, ...Object.values(compose().services).map((service) => service.image)].filter((name) => name?.startsWith('secrets-service') && name !== image)).toEqual([]);
    expect(read('docs', 'deployment.md')).toContain(`docker build -f deploy/Dockerfile -t ${image} .`);
  });

  test('the build the image copies holds no test helpers (libs/testing, a lib\'s testing/, specs, the bench)', () => {
    expect(read('deploy', 'Dockerfile')).toContain('COPY --from=build /src/dist ./dist');
    const files = readdirSync(path.join(root, 'dist'), { recursive: true, encoding: 'utf8' });
    expect(files).toContain(path.join('apps', 'cli', 'src', 'main.js'));
    expect(files.filter((file) => /(^|\/)(testing|bench)(\/|$)|\.spec\.js$/.test(file))).toEqual([]);
  });

  test('.dockerignore keeps the host\'s node_modules and build, git and the secrets out of the context', () => {
    const ignored = read('.dockerignore').split('\n').map((line) => line.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', '**/node_modules', 'dist', '.git', 'deploy/secrets']));
  });
});

// ---- a cluster run with the deployment's files ------------------------------------------------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1', () => socket.end(() => resolve(true)));
    socket.on('error', () => resolve(false));
  });
}

/** Starts a server program and resolves once it accepts connections on `port`. */
async function startDaemon(command: string, args: string[], environment: Record<string, string>, port: number): Promise<ChildProcess> {
  const child = spawn(command, args, { env: { ...process.env, ...environment }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`${command} exited: ${log}`);
    return portOpen(port);
  }, 30_000);
  return child;
}

/** The engine services' health listener and the path their probes ask (deploy/k8s, service.hcl). */
const SERVICE_HEALTH_PORT = 8210;
const SERVICE_HEALTH_PROBE = '/v1/sys/health?sealedcode=204';

describe('a cluster run with the deployment\'s configurations, nats.conf and generated secrets', () => {
  const daemons: ChildProcess[] = [];
  const apps: ServerProcess[] = [];
  const database = `svc_deploy_${randomBytes(4).toString('hex')}`;
  let databaseUrl: string;
  let natsPort: number;
  let gatewayUrl: string;
  let replicationService: ServerProcess | undefined;

  beforeAll(async () => {
    natsPort = await freePort();
    const tlsFiles: Record<string, string> = { 'server.crt': 'nats-server.crt', 'server.key': 'nats-server.key', 'ca.crt': 'ca.crt' };
    const natsConfFile = path.join(workDir, 'nats.conf');
    writeFileSync(natsConfFile, natsConf().replace(/\/etc\/nats\/tls\/([\w.]+)/g, (_, file: string) => path.join(secretsDir, tlsFiles[file])));
    const natsArgs = ['-c', natsConfFile, '-a', '127.0.0.1', '-p', String(natsPort)];
    daemons.push(await startDaemon('/usr/sbin/nats-server', natsArgs, readEnvFile(path.join(secretsDir, 'nats.env')), natsPort));

    // Redis as compose runs it, on a port of its own.
    const redisPort = await freePort();
    const redisCommand = compose().services.redis.command!.at(-1)!.replace(/^exec /, '').replaceAll('$$', '$');
    const redisArgs = ['-c', `exec ${redisCommand} --port ${redisPort} --bind 127.0.0.1`];
    daemons.push(await startDaemon('sh', redisArgs, readEnvFile(path.join(secretsDir, 'redis.env')), redisPort));

    databaseUrl = await createDatabase(database);
    // The configurations and files as the apps see them, with this machine's addresses.
    const etcSvc = installEtcSvc(path.join(workDir, 'cluster-etc-svc'));
    const configFile = (name: string) => {
      const file = path.join(workDir, `cluster-${name}.hcl`);
      const text = readFileSync(path.join(etcSvc, `${name}.hcl`), 'utf8')
        .replaceAll('/etc/svc/', `${etcSvc}/`)
        .replace('tls://nats:4222', `tls://localhost:${natsPort}`)
        .replace('"redis:6379"', `"127.0.0.1:${redisPort}"`)
        .replace('0.0.0.0:8200', '127.0.0.1:0')
        .replace('0.0.0.0:8201', '127.0.0.1:0')
        .replace(`0.0.0.0:${SERVICE_HEALTH_PORT}`, '127.0.0.1:0');
      writeFileSync(file, text);
      return file;
    };
    const environment = (name: string) => ({ ...readEnvFile(path.join(secretsDir, `${name}.env`)), SVC_PG_CONNECTION_URL: databaseUrl });
    apps.push(await startServerProcess('gateway', [`-config=${configFile('gateway')}`, '-service=gateway'], undefined, { env: environment('gateway') }));
    const serviceConfig = configFile('service');
    for (const app of engineServiceApps) {
      apps.push(await startServerProcess(app, [`-config=${serviceConfig}`, `-service=${app}`], undefined, { env: environment('service') }));
    }
    gatewayUrl = `http://${apps[0].addresses[0]}`;
    replicationService = await startServerProcess('replication', [`-config=${configFile('gateway')}`, '-service=replication'], undefined, { env: environment('gateway') });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...apps, ...(replicationService ? [replicationService] : [])].map((app) => app.stop()));
    for (const daemon of daemons) daemon.kill();
    await dropDatabase(database);
  });

  test('the gateway, the replication service and every engine service start; once unsealed, transit answers through the bus, replication through the service', async () => {
    const { rootToken: token } = await initAndUnseal(gatewayUrl);
    expect((await api(gatewayUrl, 'POST', '/v1/sys/mounts/transit', { token, body: { type: 'transit' } })).status).toBe(204);
    const plaintext = Buffer.from('deployed').toString('base64');
    let ciphertext = '';
    await eventually(async () => {
      const encrypted = await api<{ data: { ciphertext: string } }>(gatewayUrl, 'POST', '/v1/transit/encrypt/deploy', { token, body: { plaintext } });
      ciphertext = encrypted.body?.data?.ciphertext ?? '';
      return encrypted.status === 200;
    }, 30_000);
    const decrypted = await api<{ data: { plaintext: string } }>(gatewayUrl, 'POST', '/v1/transit/decrypt/deploy', { token, body: { ciphertext } });
    expect(decrypted.body.data.plaintext).toBe(plaintext);

    // The gateway reaches the replication service (the same NATS user) for what needs the cluster's replication.
    expect((await api(gatewayUrl, 'PUT', '/v1/sys/replication/dr/primary/enable', { token, body: {} })).status).toBe(204);
    const status = await api<{ data: { mode: string; last_wal: number } }>(gatewayUrl, 'GET', '/v1/sys/replication/dr/status');
    expect(status.body.data).toMatchObject({ mode: 'primary', last_wal: expect.any(Number) });
  });

  test('NATS takes each user\'s password only over TLS with the apps\' client certificate; the services\' health probe sees their connection', async () => {
    const probeServices = () => Promise.all(apps.slice(1).map(async (app) => (await api(`http://${app.addresses[0]}`, 'GET', SERVICE_HEALTH_PROBE)).status));
    expect(await probeServices()).toEqual(apps.slice(1).map(() => 200));
    const { SVC_NATS_PASSWORD: password } = readEnvFile(path.join(secretsDir, 'service.env'));
    const servers = `tls://localhost:${natsPort}`;
    const caFile = path.join(secretsDir, 'ca.crt');
    const tls = { caFile, certFile: path.join(secretsDir, 'nats-client.crt'), keyFile: path.join(secretsDir, 'nats-client.key') };
    const attempt = (options: { user: string; pass: string; tls?: { caFile: string; certFile?: string; keyFile?: string } }) =>
      natsConnect({ servers, reconnect: false, timeout: 5_000, ...options }).then(
        (connection) => connection.close().then(() => 'connected'),
        (err: Error) => err.message,
      );
    expect(await attempt({ user: 'service', pass: password, tls })).toBe('connected');
    expect(await attempt({ user: 'gateway', pass: password, tls })).toMatch(/authorization/i);
    // Without the client certificate NATS ends the TLS handshake, whatever the password (the client
    // reads its alert, or only the reset connection when the server closes first).
    expect(await attempt({ user: 'service', pass: password, tls: { caFile } })).toMatch(/alert (bad certificate|certificate required)|ECONNRESET/);
    // A client that does not trust the deployment's CA gets no connection: the server speaks only TLS.
    expect(await attempt({ user: 'service', pass: password })).toMatch(/unable to verify/);

    // Without NATS nothing can reach a service: its probe fails.
    daemons[0].kill();
    await eventually(async () => (await probeServices()).every((status) => status === 503), 30_000, 200);
  });
});
