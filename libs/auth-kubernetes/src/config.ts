/** The method's configuration (`config`): how to reach the Kubernetes API server and how to check tokens. */
import { X509Certificate } from 'node:crypto';
import type { FieldData, FieldMap, PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import type { StorageView } from '@svc/storage';
import { LEGACY_ISSUER, publicKeyOf } from './service-account-jwt';

export interface KubernetesConfig {
  /** Base URL of the API server, without a trailing slash. */
  kubernetes_host: string;
  kubernetes_ca_cert: string;
  token_reviewer_jwt: string;
  pem_keys: string[];
  issuer: string;
  disable_iss_validation: boolean;
  disable_local_ca_jwt: boolean;
  use_annotations_as_alias_metadata: boolean;
}

const CONFIG_DEFAULTS: Omit<KubernetesConfig, 'kubernetes_host'> = {
  kubernetes_ca_cert: '',
  token_reviewer_jwt: '',
  pem_keys: [],
  issuer: '',
  disable_iss_validation: true,
  disable_local_ca_jwt: false,
  use_annotations_as_alias_metadata: false,
};

const CONFIG_KEY = 'config';

const CONFIG_FIELDS: FieldMap = {
  kubernetes_host: { type: 'string', description: 'URL of the Kubernetes API server (http or https), e.g. `https://10.0.0.1:6443`; required when the configuration is created.' },
  kubernetes_ca_cert: {
    type: 'string',
    default: '',
    description:
      'PEM CA certificate(s) the API server\'s TLS certificate must chain to. Empty: the pod\'s service-account ca.crt when the server runs in a pod (and disable_local_ca_jwt is false), otherwise the system\'s trusted CAs.',
  },
  token_reviewer_jwt: {
    type: 'string',
    sensitive: true,
    default: '',
    description:
      'Bearer token the method calls the TokenReview API with (its account needs permission to create tokenreviews); never returned. ' +
      'Empty: the pod\'s service-account token when the server runs in a pod (and disable_local_ca_jwt is false), otherwise the JWT of each login.',
  },
  pem_keys: {
    type: 'comma-string-list',
    default: [],
    description: 'PEM public keys or certificates that sign service-account JWTs. When set, logins are verified against them here and the TokenReview API is not called.',
  },
  issuer: { type: 'string', default: '', description: `The \`iss\` JWTs must have when disable_iss_validation is false; empty for "${LEGACY_ISSUER}".` },
  disable_iss_validation: { type: 'bool', default: true, description: 'Do not check the JWT\'s issuer (default true).' },
  disable_local_ca_jwt: { type: 'bool', default: false, description: 'Do not fall back to the pod\'s service-account token and CA certificate when the server runs in a pod.' },
  use_annotations_as_alias_metadata: {
    type: 'bool',
    default: false,
    description:
      'Add the service account\'s `vault.hashicorp.com/alias-metadata-<key>` annotations to the entity alias metadata (as `<key>`); the method reads the account from the API server, which needs permission to get serviceaccounts.',
  },
};

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The base URL as stored; a 400 when it is not an http(s) URL. */
function checkedHost(host: string): string {
  let url: URL | undefined;
  try {
    url = new URL(host.trim());
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash) {
    throw ServiceError.badRequest('field "kubernetes_host": must be the http or https URL of the Kubernetes API server, e.g. https://10.0.0.1:6443');
  }
  return url.href.replace(/\/+$/, '');
}

function checkCaCert(pem: string): void {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  const parses = (block: string) => {
    try {
      return Boolean(new X509Certificate(block));
    } catch {
      return false;
    }
  };
  if (blocks.length === 0 || !blocks.every(parses)) throw ServiceError.badRequest('field "kubernetes_ca_cert": not one or more PEM-encoded X.509 certificates');
}

function checkPemKeys(keys: string[]): void {
  keys.forEach((pem, index) => {
    try {
      publicKeyOf(pem);
    } catch (err) {
      throw ServiceError.badRequest(`field "pem_keys": entry ${index + 1} is ${(err as Error).message}`);
    }
  });
}

/** The configuration a write leaves: fields sent replace the stored ones, the others stay (or take their defaults on create). */
function readConfig(f: FieldData, existing: KubernetesConfig | null): KubernetesConfig {
  if (!existing && !f.has('kubernetes_host')) throw ServiceError.badRequest('missing required field "kubernetes_host"');
  const value = <K extends keyof KubernetesConfig>(name: K): KubernetesConfig[K] =>
    f.has(name) ? f.get<KubernetesConfig[K]>(name) : existing ? existing[name] : (CONFIG_DEFAULTS as KubernetesConfig)[name];
  const config: KubernetesConfig = {
    kubernetes_host: checkedHost(value('kubernetes_host')),
    kubernetes_ca_cert: value('kubernetes_ca_cert').trim(),
    token_reviewer_jwt: value('token_reviewer_jwt').trim(),
    pem_keys: value('pem_keys').map((pem) => pem.trim()).filter(Boolean),
    issuer: value('issuer').trim(),
    disable_iss_validation: value('disable_iss_validation'),
    disable_local_ca_jwt: value('disable_local_ca_jwt'),
    use_annotations_as_alias_metadata: value('use_annotations_as_alias_metadata'),
  };
  if (config.kubernetes_ca_cert !== '') checkCaCert(config.kubernetes_ca_cert);
  // It goes into an Authorization header: a line break or space would break the request, not the login.
  if (!/^[!-~]*$/.test(config.token_reviewer_jwt)) throw ServiceError.badRequest('field "token_reviewer_jwt": must be a bearer token (printable characters, no spaces)');
  checkPemKeys(config.pem_keys);
  return config;
}

export function readStoredConfig(storage: StorageView): Promise<KubernetesConfig | null> {
  return storage.getJSON<KubernetesConfig>(CONFIG_KEY);
}

export function configPath(storage: StorageView): PathDeclaration {
  const write = async (f: FieldData): Promise<undefined> => {
    await storage.putJSON(CONFIG_KEY, readConfig(f, await readStoredConfig(storage)));
    return undefined;
  };
  return {
    pattern: 'config',
    synopsis: 'Configures how the method reaches the Kubernetes API server and checks service-account JWTs.',
    description:
      'Logins are checked by the Kubernetes TokenReview API at kubernetes_host, unless pem_keys are set. ' +
      'The token reviewer JWT is never returned: reads show token_reviewer_jwt_set instead. An update changes only the fields it sends.',
    fields: CONFIG_FIELDS,
    existenceCheck: async () => (await readStoredConfig(storage)) !== null,
    operations: {
      read: {
        summary: 'Read the configuration (never the token reviewer JWT).',
        handler: async () => {
          const config = await readStoredConfig(storage);
          if (!config) return undefined;
          const { token_reviewer_jwt: reviewerJwt, ...shown } = config;
          return { data: { ...shown, token_reviewer_jwt_set: reviewerJwt !== '' } };
        },
      },
      create: { summary: 'Configure the method.', handler: (_req, f) => write(f) },
      update: { summary: 'Update the configuration (fields not sent stay).', handler: (_req, f) => write(f) },
    },
  };
}
