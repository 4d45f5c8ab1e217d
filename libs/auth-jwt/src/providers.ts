/**
 * Where the signing keys of a configuration come from (its public keys, a JWKS URL, or the JWKS
 * its OIDC discovery names) and its OIDC client: built once per configuration, so a login neither
 * rediscovers nor refetches keys it has, while a key the provider rotated in is fetched on first sight.
 */
import { createHash, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, customFetch, type CompactVerifyGetKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { providerFetch, type ProviderFetch } from './provider-fetch';
import type { JwtConfig } from './records';

export interface OutboundSettings {
  /** The deadline of each call to the provider (discovery, JWKS, token endpoint). */
  deadlineMs: number;
  /** The least time between two JWKS fetches prompted by tokens signed with a key it lacks. */
  jwksCooldownMs: number;
}

/** What verifies the tokens of one configuration. */
export interface IdentityProvider {
  /** Finds the key a token's header names (or the keys that could have signed it). */
  keys: CompactVerifyGetKey;
  /** Where the keys come from, for messages: a URL, or "jwt_validation_pubkeys". */
  keySource: string;
  /** The issuer the discovery document names; '' without discovery. */
  issuer: string;
  /** The OIDC client (authorization URL, code exchange), with discovery and a client ID only. */
  client?: oidc.Configuration;
}

/** Which discovery or key fetch failed, and why. */
export class ProviderFailure extends Error {
  constructor(
    /** The config field whose URL failed. */
    readonly field: string,
    message: string,
    options: { cause: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderFailure';
  }
}

/**
 * The library needs a client ID to discover with; a configuration without one (JWT logins only)
 * never makes a client request, so this one is never sent.
 */
const DISCOVERY_ONLY_CLIENT_ID = 'jwt-logins-only';

/** The public keys (PEM: SPKI, PKCS#1 RSA or a certificate) of `jwt_validation_pubkeys`; throws on the first that is none. */
export function parsePublicKeys(pems: string[]): KeyObject[] {
  return pems.map((pem, index) => {
    try {
      return pem.includes('CERTIFICATE') ? new X509Certificate(pem).publicKey : createPublicKey(pem);
    } catch {
      throw new Error(`entry ${index + 1} is not a PEM public key or certificate`);
    }
  });
}

export async function connectProvider(config: JwtConfig, settings: OutboundSettings): Promise<IdentityProvider> {
  if (config.jwt_validation_pubkeys.length > 0) {
    const local = createLocalJWKSet({ keys: parsePublicKeys(config.jwt_validation_pubkeys).map((key) => key.export({ format: 'jwk' }) as JWK) });
    // Static keys have no key IDs: a token's kid chooses none of them, each that fits its algorithm is tried.
    return { keys: (header, token) => local({ alg: header.alg }, token), keySource: 'jwt_validation_pubkeys', issuer: '' };
  }
  if (config.jwks_url) {
    const fetch = providerFetch({ caPem: config.jwks_ca_pem, deadlineMs: settings.deadlineMs });
    const keys = remoteKeys(config.jwks_url, fetch, settings);
    await keys.reload().catch((err: unknown) => {
      throw new ProviderFailure('jwks_url', `error fetching the JWKS "${config.jwks_url}"`, { cause: err });
    });
    return { keys, keySource: config.jwks_url, issuer: '' };
  }
  return discover(config, settings);
}

async function discover(config: JwtConfig, settings: OutboundSettings): Promise<IdentityProvider> {
  const url = config.oidc_discovery_url;
  const fetch = providerFetch({ caPem: config.oidc_discovery_ca_pem, deadlineMs: settings.deadlineMs });
  // The provider's own choice: plain HTTP is allowed as it is for the JWKS URL.
  const execute = new URL(url).protocol === 'http:' ? [oidc.allowInsecureRequests] : [];
  let metadata: oidc.ServerMetadata;
  try {
    const discovered = await oidc.discovery(new URL(url), config.oidc_client_id || DISCOVERY_ONLY_CLIENT_ID, undefined, undefined, {
      [oidc.customFetch]: fetch,
      timeout: settings.deadlineMs / 1000,
      execute,
    });
    metadata = discovered.serverMetadata();
  } catch (err) {
    throw new ProviderFailure('oidc_discovery_url', `error checking the OIDC discovery URL "${url}"`, { cause: err });
  }
  if (!metadata.jwks_uri) throw new ProviderFailure('oidc_discovery_url', `error checking the OIDC discovery URL "${url}"`, { cause: new Error('its discovery document names no jwks_uri') });
  return {
    keys: remoteKeys(metadata.jwks_uri, fetch, settings),
    keySource: metadata.jwks_uri,
    issuer: metadata.issuer,
    client: config.oidc_client_id ? oidcClient(metadata, config, fetch, settings, execute) : undefined,
  };
}

function remoteKeys(url: string, fetch: ProviderFetch, settings: OutboundSettings) {
  return createRemoteJWKSet(new URL(url), { [customFetch]: fetch, timeoutDuration: settings.deadlineMs, cooldownDuration: settings.jwksCooldownMs });
}

/** The client, authenticating with its secret as the provider prefers (HTTP Basic unless it only takes the form's). */
function oidcClient(
  metadata: oidc.ServerMetadata,
  config: JwtConfig,
  fetch: ProviderFetch,
  settings: OutboundSettings,
  execute: ((client: oidc.Configuration) => void)[],
): oidc.Configuration {
  const methods = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  const postOnly = methods.includes('client_secret_post') && !methods.includes('client_secret_basic');
  const secret = config.oidc_client_secret;
  const client = new oidc.Configuration(metadata, config.oidc_client_id, secret, postOnly ? oidc.ClientSecretPost(secret) : oidc.ClientSecretBasic(secret));
  client[oidc.customFetch] = fetch;
  client.timeout = settings.deadlineMs / 1000;
  for (const extension of execute) extension(client);
  return client;
}

/** The fields a provider is built from, hashed: another value of any of them builds another provider. */
function fingerprint(config: JwtConfig): string {
  const { oidc_discovery_url, oidc_discovery_ca_pem, oidc_client_id, oidc_client_secret, jwks_url, jwks_ca_pem, jwt_validation_pubkeys } = config;
  const inputs = [oidc_discovery_url, oidc_discovery_ca_pem, oidc_client_id, oidc_client_secret, jwks_url, jwks_ca_pem, jwt_validation_pubkeys];
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex');
}

/** The provider of the mount's current configuration, one in this process, built anew when the configuration changes. */
export class ProviderCache {
  private current?: { fingerprint: string; provider: Promise<IdentityProvider> };

  constructor(private readonly settings: OutboundSettings) {}

  get(config: JwtConfig): Promise<IdentityProvider> {
    const wanted = fingerprint(config);
    if (this.current?.fingerprint !== wanted) {
      const entry = { fingerprint: wanted, provider: connectProvider(config, this.settings) };
      this.current = entry;
      // A failed connection is not kept: the next login tries again.
      entry.provider.catch(() => {
        if (this.current === entry) this.current = undefined;
      });
    }
    return this.current.provider;
  }
}
