/** `config`: where the signing keys come from (exactly one source) and the OIDC client. */
import { X509Certificate } from 'node:crypto';
import type { FieldData, FieldMap, PathDeclaration } from '@svc/framework';
import { ServiceError } from '@svc/api-contract';
import { failureReason } from './provider-fetch';
import { parsePublicKeys, ProviderFailure } from './providers';
import { CONFIG_KEY, RESPONSE_MODES, SIGNING_ALGORITHMS, type JwtConfig } from './records';
import type { JwtAuth } from './method';

const CONFIG_FIELDS: FieldMap = {
  oidc_discovery_url: { type: 'string', description: 'Base URL of the OIDC provider (its issuer), without ".well-known/openid-configuration": keys and endpoints come from its discovery document.' },
  oidc_discovery_ca_pem: { type: 'string', description: 'PEM CA certificates the discovery URL and the endpoints it names must chain to; default the system\'s.' },
  oidc_client_id: { type: 'string', description: 'The OAuth client ID at the provider, for OIDC roles.' },
  oidc_client_secret: { type: 'string', sensitive: true, description: 'The OAuth client secret at the provider, for OIDC roles; never shown by a read.' },
  oidc_response_mode: { type: 'string', allowed: RESPONSE_MODES, default: 'query', description: 'How the provider hands the code back: "query" (a redirect) or "form_post".' },
  oidc_response_types: { type: 'comma-string-list', allowed: ['code'], default: ['code'], description: 'Response types requested: "code" (the authorization code flow with PKCE).' },
  jwks_url: { type: 'string', description: 'URL of a JSON Web Key Set whose keys sign the tokens.' },
  jwks_ca_pem: { type: 'string', description: 'PEM CA certificates the JWKS URL must chain to; default the system\'s.' },
  jwt_validation_pubkeys: { type: 'comma-string-list', description: 'PEM public keys (or certificates) that sign the tokens, checked locally.' },
  jwt_supported_algs: { type: 'comma-string-list', allowed: SIGNING_ALGORITHMS, description: 'Signature algorithms accepted; default all asymmetric ones.' },
  bound_issuer: { type: 'string', description: 'The iss a token must have; default the issuer the discovery document names, if any.' },
  default_role: { type: 'string', description: 'The role of a login that names none.' },
  provider_config: { type: 'map', default: {}, description: 'Provider-specific settings, kept as given.' },
  namespace_in_state: { type: 'bool', description: 'Carry the namespace of an OIDC login in its state rather than in the redirect URI (default true).' },
};

/** The configuration fields whose values must be PEM CA certificates. */
const CA_FIELDS = ['oidc_discovery_ca_pem', 'jwks_ca_pem'] as const;
const KEY_SOURCES = ['oidc_discovery_url', 'jwks_url', 'jwt_validation_pubkeys'] as const;

const invalid = (field: string, problem: string) => ServiceError.badRequest(`field "${field}": ${problem}`);

/** A write replaces the whole configuration, as Vault's does; namespace_in_state stays unless sent. */
function readConfig(f: FieldData, existing: JwtConfig | null): JwtConfig {
  const value = <T>(name: string, absent: T): T => (f.has(name) ? f.get<T>(name) : absent);
  return {
    oidc_discovery_url: value('oidc_discovery_url', ''),
    oidc_discovery_ca_pem: value('oidc_discovery_ca_pem', ''),
    oidc_client_id: value('oidc_client_id', ''),
    oidc_client_secret: value('oidc_client_secret', ''),
    oidc_response_mode: f.get('oidc_response_mode'),
    oidc_response_types: f.get('oidc_response_types'),
    jwks_url: value('jwks_url', ''),
    jwks_ca_pem: value('jwks_ca_pem', ''),
    jwt_validation_pubkeys: value('jwt_validation_pubkeys', []),
    jwt_supported_algs: value('jwt_supported_algs', []),
    bound_issuer: value('bound_issuer', ''),
    default_role: value('default_role', '').toLowerCase(),
    provider_config: f.get('provider_config'),
    namespace_in_state: value('namespace_in_state', existing?.namespace_in_state ?? true),
  };
}

/** The checks that need no provider; throws a 400 naming the first field that is wrong. */
export function checkConfig(config: JwtConfig): void {
  const sources = KEY_SOURCES.filter((name) => config[name].length > 0);
  if (sources.length !== 1) {
    throw ServiceError.badRequest(`exactly one of "oidc_discovery_url", "jwks_url" and "jwt_validation_pubkeys" must be set (${sources.length ? `got ${sources.join(', ')}` : 'none is'})`);
  }
  for (const field of ['oidc_discovery_url', 'jwks_url'] as const) if (config[field]) checkHttpUrl(field, config[field]);
  if (config.oidc_discovery_url.includes('/.well-known/')) throw invalid('oidc_discovery_url', 'must be the issuer\'s base URL, without ".well-known/openid-configuration"');
  for (const field of CA_FIELDS) if (config[field]) checkCertificates(field, config[field]);
  if (Boolean(config.oidc_client_id) !== Boolean(config.oidc_client_secret)) throw ServiceError.badRequest('both "oidc_client_id" and "oidc_client_secret" must be set for OIDC');
  if (config.oidc_client_id && !config.oidc_discovery_url) throw invalid('oidc_client_id', 'OIDC needs "oidc_discovery_url"');
  try {
    parsePublicKeys(config.jwt_validation_pubkeys);
  } catch (err) {
    throw invalid('jwt_validation_pubkeys', (err as Error).message);
  }
}

function checkHttpUrl(field: string, text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(field, `"${text}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid(field, `"${text}" is not an http(s) URL`);
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function checkCertificates(field: string, pem: string): void {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw invalid(field, 'holds no PEM certificate');
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch {
      throw invalid(field, `certificate ${index + 1} cannot be parsed`);
    }
  });
}

/** What a read shows: everything but the client secret. */
function configData(config: JwtConfig): Record<string, unknown> {
  const { oidc_client_secret: _secret, ...shown } = config;
  return shown;
}

export function configPaths(method: JwtAuth): PathDeclaration[] {
  return [
    {
      pattern: 'config',
      synopsis: 'Configures where the signing keys of tokens come from, and the OIDC client.',
      description:
        'Exactly one of oidc_discovery_url, jwks_url and jwt_validation_pubkeys is the source of the signing keys. ' +
        'A write fetches the discovery document (or the JWKS) and parses the public keys, and is refused when that fails.',
      fields: CONFIG_FIELDS,
      operations: {
        read: {
          summary: 'Read the configuration (never the client secret).',
          handler: async () => {
            const config = await method.config();
            return config ? { data: configData(config) } : undefined;
          },
        },
        update: {
          summary: 'Write the configuration.',
          handler: async (_req, f) => {
            const config = readConfig(f, await method.config());
            checkConfig(config);
            try {
              await method.providers.get(config);
            } catch (err) {
              if (err instanceof ProviderFailure) throw invalid(err.field, `${err.message}: ${failureReason(err.cause)}`);
              throw err;
            }
            await method.storage.putJSON(CONFIG_KEY, config);
            return undefined;
          },
        },
      },
    },
  ];
}
