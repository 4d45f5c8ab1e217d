import { readJson, writeJson, type StorageView } from '@svc/storage';

/**
 * Secret sync records: destinations (where secrets go, with their credentials), associations (one
 * KV version 2 secret linked to one destination, with its sync status) and where they are stored in
 * the barrier. The gateway's sys/sync/* paths write them; the sync worker reads them and records
 * each association's outcome.
 */

export const DESTINATION_TYPES = ['cloud-sm', 'cloudb-kv', 'cloudc-sm', 'codehost', 'webhost-project'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export function isDestinationType(value: string): value is DestinationType {
  return (DESTINATION_TYPES as readonly string[]).includes(value);
}

/** Whole secret as one provider value (JSON), or one provider value per key of the secret. */
export const GRANULARITIES = ['secret-path', 'secret-key'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** Vault's association statuses (INTERNAL_VAULT_ERROR under this service's name). */
export type SyncStatus =
  | 'PENDING'
  | 'SYNCING'
  | 'SYNCED'
  | 'UNSYNCING'
  | 'UNSYNCED'
  | 'INTERNAL_SERVICE_ERROR'
  | 'CLIENT_SIDE_ERROR'
  | 'EXTERNAL_SERVICE_ERROR';

/**
 * How long one provider operation (the write or the delete of one name, every request it makes
 * included, connecting too) may take before it is cancelled and the association records an
 * EXTERNAL_SERVICE_ERROR, retried with backoff.
 */
export const PROVIDER_CALL_DEADLINE_MS = 10_000;

/** Statuses a sync or unsync in progress has; `set` and `remove` wait for any other. */
export const IN_PROGRESS: ReadonlySet<SyncStatus> = new Set(['PENDING', 'SYNCING', 'UNSYNCING']);

export interface DestinationOptions {
  granularity_level: Granularity;
  secret_name_template: string;
  /** Added to the tags/labels every managed secret carries (where the provider has tags). */
  custom_tags: Record<string, string>;
}

export interface Destination {
  name: string;
  type: DestinationType;
  connection_details: Record<string, unknown>;
  options: DestinationOptions;
}

export interface Association {
  accessor: string;
  /** Mount path as the caller named it, with its trailing '/' (e.g. "secret/"). */
  mount: string;
  /** The namespace of the mount ('' for the root). */
  namespace: string;
  mount_uuid: string;
  secret_name: string;
  sync_status: SyncStatus;
  updated_at: string;
  /** The cause of an error status: what the provider or the service said. */
  last_error?: string;
  /** Fixed when the association is made: a later change of the destination's options applies to new ones. */
  granularity: Granularity;
  secret_name_template: string;
  /** Provider names written for this secret, keyed by sub-key ('' for the whole secret). */
  remote_names: Record<string, string>;
}

/** The associations of one destination, keyed `<accessor>/<secret name>`. */
export type AssociationMap = Record<string, Association>;

export function associationKey(accessor: string, secretName: string): string {
  return `${accessor}/${secretName}`;
}

/** `<type>/<name>`: how a destination is named in markers, queue entries and views. */
export function destinationId(type: string, name: string): string {
  return `${type}/${name}`;
}

export function parseDestinationId(id: string): { type: DestinationType; name: string } {
  const slash = id.indexOf('/');
  return { type: id.slice(0, slash) as DestinationType, name: id.slice(slash + 1) };
}

/** Barrier keys (root of the barrier) of the sync records. */
export const SYNC_KEYS = {
  destinationsRoot: 'sys/sync/destinations/',
  destination: (type: string, name: string) => `sys/sync/destinations/${type}/${name}`,
  associationsRoot: 'sys/sync/associations/',
  associations: (type: string, name: string) => `sys/sync/associations/${type}/${name}`,
};

/**
 * The sync records over the barrier's root, read inside transactions so that a gateway's read
 * cache never hides what the sync service wrote.
 */
export class SyncRecords {
  constructor(private readonly root: StorageView) {}

  destination(type: string, name: string): Promise<Destination | null> {
    return this.root.transaction((tx) => readJson<Destination>(tx, SYNC_KEYS.destination(type, name)));
  }

  async associations(type: string, name: string): Promise<AssociationMap> {
    return (await this.root.transaction((tx) => readJson<AssociationMap>(tx, SYNC_KEYS.associations(type, name)))) ?? {};
  }

  /** Changes one association under the destination's association lock; `change` answering undefined removes it. */
  updateAssociation(type: string, name: string, key: string, change: (current: Association | undefined) => Association | undefined): Promise<void> {
    return this.root.transaction(async (tx) => {
      const storageKey = SYNC_KEYS.associations(type, name);
      await tx.lock(storageKey);
      const map = (await readJson<AssociationMap>(tx, storageKey)) ?? {};
      const next = change(map[key]);
      if (next) map[key] = next;
      else delete map[key];
      await writeJson(tx, storageKey, map);
    });
  }

  async destinationNames(type: string): Promise<string[]> {
    return (await this.root.list(`${SYNC_KEYS.destinationsRoot}${type}/`)).filter((name) => !name.endsWith('/'));
  }

  /** Every association of every destination, with the destination it belongs to. */
  async allAssociations(): Promise<{ type: DestinationType; name: string; association: Association }[]> {
    const found: { type: DestinationType; name: string; association: Association }[] = [];
    for (const type of DESTINATION_TYPES) {
      for (const name of await this.destinationNames(type)) {
        for (const association of Object.values(await this.associations(type, name))) found.push({ type, name, association });
      }
    }
    return found;
  }
}
