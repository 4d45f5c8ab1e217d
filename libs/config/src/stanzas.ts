import type { StorageConfig } from '@svc/storage';
import type { OaepHash, Pkcs11Mechanism, TransitSealTls } from '@svc/seal';
import type { ServerConfig } from './types';
import type { Block } from './blocks';
import { ConfigError } from './errors';
import { Section } from './section';
import { parseAwsKmsSeal } from './awskms-stanza';
import { requireReadableFile } from './listener';

type BusConfig = NonNullable<ServerConfig['bus']>;
type LocksConfig = NonNullable<ServerConfig['locks']>;

/** Parsers of one stanza kind, keyed by block type; each reads its fields from a Section. */
type TypeParsers<T> = Record<string, (section: Section) => T | Promise<T>>;

const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
// One subject token: a dot or a wildcard would let one cluster's subjects overlap another's.
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;

const storageParsers: TypeParsers<StorageConfig> = {
  postgresql: (section) => {
    const options: StorageConfig['options'] = { connection_url: section.requiredString('connection_url') };
    const table = section.string('table');
    if (table !== undefined) {
      if (!SQL_IDENTIFIER.test(table)) throw section.error('table must be a SQL identifier such as svc_store');
      options.table = table;
    }
    const maxConnections = section.int('max_connections');
    if (maxConnections !== undefined) {
      if (maxConnections < 1) throw section.error('max_connections must be at least 1');
      options.max_connections = maxConnections;
    }
    return { type: 'postgresql', options };
  },
  embedded: (section) => ({ type: 'embedded', options: { path: section.requiredString('path') } }),
  inmem: () => ({ type: 'inmem', options: {} }),
};

const busParsers: TypeParsers<BusConfig> = {
  nats: (section) => {
    const servers = section.stringList('servers') ?? section.stringList('address') ?? [];
    if (servers.length === 0) throw section.error('servers (or address) is required');
    const user = section.string('user');
    const password = section.string('password');
    if (password !== undefined && user === undefined) throw section.error('password requires user');
    const tls = {
      caFile: section.string('tls_ca_file'),
      certFile: section.string('tls_cert_file'),
      keyFile: section.string('tls_key_file'),
    };
    if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
      throw section.error('tls_cert_file and tls_key_file must be given together');
    }
    return withoutUndefined({
      type: 'nats' as const,
      servers,
      name: section.string('name'),
      user,
      password,
      token: section.string('token'),
      credsFile: section.string('creds_file'),
      tls: Object.values(tls).some((file) => file !== undefined) ? withoutUndefined(tls) : undefined,
      requestTimeoutMs: section.durationMs('request_timeout'),
      subjectPrefix: subjectToken(section, 'subject_prefix', 'svc-prod'),
      // Required, but checked where the key is read (the bus), which says how to make one.
      clusterKeyFile: section.string('cluster_key_file'),
      inboxPrefix: subjectToken(section, 'inbox_prefix', '_INBOX_gateway'),
    });
  },
};

/** A field that is one subject token; unset means the bus users' default. */
function subjectToken(section: Section, field: string, example: string): string | undefined {
  const token = section.string(field);
  if (token !== undefined && !SUBJECT_TOKEN.test(token)) {
    throw section.error(`${field} must be one or more letters, digits, "-" or "_", e.g. "${example}"`);
  }
  return token;
}

const locksParsers: TypeParsers<LocksConfig> = {
  redis: (section) => {
    const db = section.int('db');
    if (db !== undefined && db < 0) throw section.error('db must be 0 or more');
    return withoutUndefined({
      type: 'redis' as const,
      address: section.requiredString('address'),
      password: section.string('password'),
      db,
      tls: section.bool('tls', false),
      keyPrefix: section.string('key_prefix'),
    });
  },
};

type SealConfig = ServerConfig['seal'];

const PKCS11_MECHANISMS: Record<string, Pkcs11Mechanism> = {
  ckm_aes_gcm: 'CKM_AES_GCM',
  '0x1087': 'CKM_AES_GCM',
  '4231': 'CKM_AES_GCM',
  ckm_rsa_pkcs_oaep: 'CKM_RSA_PKCS_OAEP',
  '0x0009': 'CKM_RSA_PKCS_OAEP',
  '0x9': 'CKM_RSA_PKCS_OAEP',
  '9': 'CKM_RSA_PKCS_OAEP',
};
const OAEP_HASHES: readonly OaepHash[] = ['sha1', 'sha224', 'sha256', 'sha384', 'sha512'];

const sealParsers: TypeParsers<SealConfig> = {
  shamir: () => ({ type: 'shamir' }),
  awskms: parseAwsKmsSeal,
  transit: async (section) => {
    const address = section.requiredString('address');
    if (!/^https?:\/\//.test(address) || !URL.canParse(address)) throw section.error('address must be an http:// or https:// URL');
    const tls = await transitSealTls(section);
    return withoutUndefined({
      type: 'transit' as const,
      address,
      token: section.requiredString('token'),
      keyName: section.requiredString('key_name'),
      mountPath: section.string('mount_path') ?? 'transit',
      namespace: section.string('namespace'),
      disableRenewal: section.bool('disable_renewal', false),
      tls,
    });
  },
  pkcs11: (section) => {
    const slot = section.string('slot');
    const tokenLabel = section.string('token_label');
    if ((slot === undefined) === (tokenLabel === undefined)) throw section.error('give either slot or token_label');
    if (slot !== undefined && !/^(?:\d+|0x[0-9a-fA-F]+)$/.test(slot)) throw section.error('slot must be a slot id, decimal or 0x hexadecimal');
    const keyLabel = section.string('key_label');
    const keyId = section.string('key_id')?.replace(/^0x/i, '');
    if (keyLabel === undefined && keyId === undefined) throw section.error('key_label (or key_id) is required');
    if (keyId !== undefined && !/^(?:[0-9a-fA-F]{2})+$/.test(keyId)) throw section.error('key_id must be hexadecimal bytes, e.g. 0x0a01');
    const mechanismText = section.string('mechanism');
    const mechanism = mechanismText === undefined ? undefined : PKCS11_MECHANISMS[mechanismText.trim().toLowerCase()];
    if (mechanismText !== undefined && !mechanism) throw section.error('mechanism must be CKM_AES_GCM (0x1087) or CKM_RSA_PKCS_OAEP (0x0009)');
    const hash = (section.string('rsa_oaep_hash') ?? 'sha256').toLowerCase();
    const rsaOaepHash = OAEP_HASHES.find((known) => known === hash);
    if (!rsaOaepHash) throw section.error(`rsa_oaep_hash must be one of ${OAEP_HASHES.join(', ')}`);
    const generateKey = section.bool('generate_key', false);
    if (generateKey && keyLabel === undefined) throw section.error('generate_key needs key_label, the label of the key to create');
    return withoutUndefined({
      type: 'pkcs11' as const,
      lib: section.requiredString('lib'),
      slot: slot === undefined ? undefined : BigInt(slot).toString(),
      tokenLabel,
      pin: section.requiredString('pin'),
      keyLabel,
      keyId: keyId?.toLowerCase(),
      mechanism,
      generateKey,
      rsaOaepHash,
    });
  },
};

/** The transit seal's `tls_*` fields (Vault's): files checked readable now, so a typo fails at start and not at the first unseal. */
async function transitSealTls(section: Section): Promise<TransitSealTls | undefined> {
  const files = { caCert: 'tls_ca_cert', clientCert: 'tls_client_cert', clientKey: 'tls_client_key' } as const;
  const tls: TransitSealTls = {};
  for (const [name, field] of Object.entries(files) as [keyof typeof files, string][]) {
    const file = section.string(field);
    if (file === undefined) continue;
    await requireReadableFile(section, field, file);
    tls[name] = file;
  }
  if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) throw section.error('tls_client_cert and tls_client_key must be given together');
  const serverName = section.string('tls_server_name');
  if (serverName !== undefined) tls.serverName = serverName;
  if (section.bool('tls_skip_verify', false)) tls.skipVerify = true;
  return Object.keys(tls).length > 0 ? tls : undefined;
}

export const parseStorage = stanzaParser('storage', storageParsers, 'unknown');
export const parseBus = stanzaParser('bus', busParsers, 'unknown');
export const parseLocks = stanzaParser('locks', locksParsers, 'unknown');
const parseSeal = stanzaParser('seal', sealParsers, 'unsupported');

/**
 * The seal stanzas: the seal in force (Shamir when none is given) and, during a seal migration,
 * the seal being migrated from, marked `disabled = "true"` as in Vault. A migration from Shamir
 * needs no stanza for it.
 */
export async function parseSeals(blocks: Block[], sourceName: string, warnings: string[]): Promise<{ seal: SealConfig; disabledSeal?: SealConfig }> {
  const isDisabled = (block: Block) => new Section(`${sourceName}: seal "${block.type}"`, block.body).bool('disabled', false);
  const withoutFlag = (block: Block): Block => ({ type: block.type, body: Object.fromEntries(Object.entries(block.body).filter(([key]) => key !== 'disabled')) });
  const disabled = blocks.filter(isDisabled);
  if (disabled.length > 1) throw new ConfigError(`${sourceName}: only one seal stanza may be disabled (the seal being migrated from)`);
  const disabledSeal = await parseSeal(disabled.map(withoutFlag), sourceName, warnings);
  const seal = (await parseSeal(blocks.filter((block) => !isDisabled(block)).map(withoutFlag), sourceName, warnings)) ?? { type: 'shamir' };
  if (disabledSeal?.type === 'shamir' && seal.type === 'shamir') {
    throw new ConfigError(`${sourceName}: a disabled shamir seal needs an auto-unseal seal stanza to migrate to (to change the unseal keys, rekey)`);
  }
  // Storage records the seal's type only, so a migration between two seals of one type could not tell when it is done.
  if (disabledSeal && disabledSeal.type === seal.type) {
    throw new ConfigError(`${sourceName}: the disabled seal and the seal in force are both "${seal.type}"; a seal migration goes between two types of seal`);
  }
  return { seal, ...(disabledSeal && { disabledSeal }) };
}

/**
 * A storage stanza of a migration's configuration (`storage_source`, `storage_destination`):
 * durable storage only, and an unknown field is an error rather than a warning.
 */
export function parseMigrationStorage(stanza: string, blocks: Block[], sourceName: string): Promise<StorageConfig | undefined> {
  if (blocks.some((block) => block.type === 'inmem')) {
    throw new ConfigError(`${sourceName}: ${stanza} "inmem": in-memory storage keeps nothing once its server stops, so there is nothing to migrate; use postgresql or embedded`);
  }
  const durable = { postgresql: storageParsers.postgresql, embedded: storageParsers.embedded };
  return stanzaParser(stanza, durable, 'unsupported', 'reject')(blocks, sourceName, []);
}

/** Reads the single block of a stanza (undefined when absent) with the parser for its type; unknown fields are warned about, or refused. */
function stanzaParser<T>(stanza: string, parsers: TypeParsers<T>, unknownWord: string, unknownFields: 'warn' | 'reject' = 'warn') {
  return async (blocks: Block[], sourceName: string, warnings: string[]): Promise<T | undefined> => {
    if (blocks.length > 1) {
      const types = blocks.map((block) => `"${block.type}"`).join(', ');
      throw new ConfigError(`${sourceName}: only one ${stanza} stanza is allowed (found ${types})`);
    }
    const [block] = blocks;
    if (!block) return undefined;
    const section = new Section(`${sourceName}: ${stanza} "${block.type}"`, block.body);
    const parse = Object.hasOwn(parsers, block.type) ? parsers[block.type] : undefined;
    if (!parse) {
      const supported = Object.keys(parsers).join(', ');
      throw new ConfigError(`${sourceName}: ${unknownWord} ${stanza} type "${block.type}" (supported: ${supported})`);
    }
    const result = await parse(section);
    if (unknownFields === 'reject') section.rejectUnknown();
    else section.warnUnknown(warnings);
    return result;
  };
}

/** Drops absent optional fields so the result carries only what the file set. */
function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;
}
