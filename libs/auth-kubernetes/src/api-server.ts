/**
 * The calls the method makes to the Kubernetes API server: TokenReview, and reading a namespace's
 * labels and a service account's annotations. Each exchange has a deadline; the server's TLS
 * certificate is checked against the configured CA (or the pod's). Tokens never appear in errors:
 * the API server's answers are reported by status and its own message only.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { exchange, ServiceError, type OutboundAnswer } from '@svc/api-contract';
import type { KubernetesConfig } from './config';
import type { ServiceAccount } from './roles';

/** Where a pod's service-account token and cluster CA are mounted; the env variable overrides it. */
export const SERVICE_ACCOUNT_DIR_ENV = 'SVC_KUBERNETES_SERVICE_ACCOUNT_DIR';
const POD_SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Answers larger than this are not an API server's answer to these requests. */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** What an API server's own message is cut to in an error. */
const MAX_MESSAGE_CHARS = 300;

export const ALIAS_METADATA_ANNOTATION = 'vault.hashicorp.com/alias-metadata-';
/** Alias metadata values are at most this long. */
const MAX_ANNOTATION_CHARS = 512;

/**
 * A file of the pod's service-account mount, read at each login so that a rotated projected token is
 * picked up; undefined outside a pod (no such file).
 */
async function podFile(name: 'token' | 'ca.crt'): Promise<string | undefined> {
  const dir = process.env[SERVICE_ACCOUNT_DIR_ENV] || POD_SERVICE_ACCOUNT_DIR;
  try {
    return (await readFile(join(dir, name), 'utf8')).trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw ServiceError.internal(`cannot read the pod's service-account ${name === 'token' ? 'token' : 'CA certificate'}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

interface Answer {
  status: number;
  body: unknown;
}

/** Who a TokenReview vouched for. */
export type ReviewedAccount = Omit<ServiceAccount, 'secretName'>;

const SERVICE_ACCOUNT_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;

/** The API server of a configuration, with the credentials and CA the method uses for it. */
export class KubernetesApi {
  private constructor(
    private readonly config: KubernetesConfig,
    /** The configured token reviewer JWT, else the pod's token; undefined when there is neither. */
    private readonly reviewerToken: string | undefined,
    private readonly ca: string | string[] | undefined,
    private readonly deadlineMs: number,
  ) {}

  /** The configuration's API server; reads the pod's token and CA when the configuration leaves them to it. */
  static async of(config: KubernetesConfig, deadlineMs: number): Promise<KubernetesApi> {
    const local = !config.disable_local_ca_jwt;
    const reviewerToken = config.token_reviewer_jwt || (local ? await podFile('token') : undefined);
    const podCa = local && !config.kubernetes_ca_cert ? await podFile('ca.crt') : undefined;
    // The pod's CA is trusted beside the system's (an API server behind a public certificate still
    // works); a configured CA alone.
    const ca = config.kubernetes_ca_cert || (podCa ? [...rootCertificates, podCa] : undefined);
    return new KubernetesApi(config, reviewerToken, ca, deadlineMs);
  }

  /**
   * The service account Kubernetes says `jwt` belongs to (for `audience`, when not empty). Without a
   * reviewer token the login's own JWT is the credential, as the API server then must accept it.
   */
  async review(jwt: string, audience: string): Promise<ReviewedAccount> {
    const spec = { token: jwt, ...(audience ? { audiences: [audience] } : {}) };
    const answer = await this.call('POST', '/apis/authentication.k8s.io/v1/tokenreviews', this.reviewerToken ?? jwt, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec });
    if (answer.status !== 200 && answer.status !== 201) throw this.refusal(answer, 'the TokenReview', this.reviewerToken === undefined);
    const status = (answer.body as { status?: { authenticated?: unknown; error?: unknown; user?: { username?: unknown; uid?: unknown } } } | null)?.status;
    if (status?.authenticated !== true) {
      const why = typeof status?.error === 'string' && status.error ? `: ${status.error.slice(0, MAX_MESSAGE_CHARS)}` : '';
      throw ServiceError.forbidden(`permission denied: Kubernetes did not authenticate the JWT${why}`);
    }
    const user = SERVICE_ACCOUNT_USER.exec(typeof status.user?.username === 'string' ? status.user.username : '');
    if (!user) throw ServiceError.forbidden('permission denied: the JWT is not the token of a service account');
    if (typeof status.user?.uid !== 'string' || status.user.uid === '') throw this.badGateway('answered a TokenReview without the account\'s uid');
    return { namespace: user[1], name: user[2], uid: status.user.uid };
  }

  /** The labels of a namespace; undefined when it does not exist. Needs a reviewer token allowed to get namespaces. */
  async namespaceLabels(namespace: string): Promise<Record<string, string> | undefined> {
    if (this.reviewerToken === undefined) {
      throw ServiceError.forbidden('permission denied: matching the namespace selector needs a token reviewer JWT (or the pod\'s service-account token) to read namespaces');
    }
    const answer = await this.call('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, this.reviewerToken);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.refusal(answer, `reading namespace "${namespace}"`, false);
    return stringMap((answer.body as { metadata?: { labels?: unknown } } | null)?.metadata?.labels);
  }

  /** The account's `vault.hashicorp.com/alias-metadata-<key>` annotations, by key. */
  async aliasMetadataAnnotations(account: ReviewedAccount, jwt: string, reserved: readonly string[]): Promise<Record<string, string>> {
    const what = `reading service account "${account.namespace}/${account.name}"`;
    const path = `/api/v1/namespaces/${encodeURIComponent(account.namespace)}/serviceaccounts/${encodeURIComponent(account.name)}`;
    const answer = await this.call('GET', path, this.reviewerToken ?? jwt);
    if (answer.status === 404) throw ServiceError.forbidden(`permission denied: service account "${account.namespace}/${account.name}" no longer exists`);
    if (answer.status !== 200) throw this.refusal(answer, what, this.reviewerToken === undefined);
    const metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(stringMap((answer.body as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations))) {
      if (!name.startsWith(ALIAS_METADATA_ANNOTATION)) continue;
      const key = name.slice(ALIAS_METADATA_ANNOTATION.length);
      if (reserved.includes(key)) throw ServiceError.badRequest(`annotation "${name}" of service account "${account.namespace}/${account.name}": "${key}" is reserved for the method's own alias metadata`);
      if (value.length > MAX_ANNOTATION_CHARS) throw ServiceError.badRequest(`annotation "${name}" of service account "${account.namespace}/${account.name}" is longer than ${MAX_ANNOTATION_CHARS} characters`);
      metadata[key] = value;
    }
    return metadata;
  }

  /**
   * The error for an answer other than the one asked for. A credentials refusal (401, 403) is the
   * caller's when the login's own JWT was the credential; otherwise the API server is at fault.
   */
  private refusal(answer: Answer, what: string, loginJwtWasCredential: boolean): ServiceError {
    const message = (answer.body as { message?: unknown } | null)?.message;
    const detail = `${answer.status}${typeof message === 'string' && message ? `: ${message.slice(0, MAX_MESSAGE_CHARS)}` : ''}`;
    if (loginJwtWasCredential && (answer.status === 401 || answer.status === 403)) {
      return ServiceError.forbidden(`permission denied: the Kubernetes API server refused ${what} made with the login's JWT, as no token reviewer JWT is configured (${detail})`);
    }
    return this.badGateway(`answered ${detail} to ${what}`);
  }

  private badGateway(what: string): ServiceError {
    return ServiceError.badGateway(`the Kubernetes API server at ${this.config.kubernetes_host} ${what}`);
  }

  /** One exchange with the API server, within the deadline; no answer (or no JSON) is a 502. */
  private async call(method: 'GET' | 'POST', path: string, bearer: string, body?: unknown): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const url = new URL(this.config.kubernetes_host + path);
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${bearer}` };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    let raw: OutboundAnswer;
    try {
      raw = await exchange(url, { method, headers, body: payload, ca: this.ca, deadlineMs: this.deadlineMs, maxAnswerBytes: MAX_ANSWER_BYTES });
    } catch (err) {
      throw this.badGateway(`did not answer: ${(err as Error).message}`);
    }
    try {
      return { status: raw.status, body: JSON.parse(raw.body.toString('utf8')) as unknown };
    } catch {
      throw this.badGateway(`answered ${raw.status} with something other than JSON`);
    }
  }
}

/** The string members of an object (labels, annotations); {} for anything else. */
function stringMap(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
