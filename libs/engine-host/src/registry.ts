import type { Backend, MountInfo } from '@svc/framework';
import type { LockManager } from '@svc/locks';
import type { StorageView } from '@svc/storage';
import type { Logger } from 'pino';

/** What a backend is built with: its mount's storage, locks for one-replica jobs, a logger. */
export interface EngineContext {
  /** The mount's own storage (`logical/<mount uuid>/` in the barrier): the backend sees nothing else. */
  storage: StorageView;
  locks: LockManager;
  logger: Logger;
  /** The text of a password policy (sys/policies/password) of a namespace, if it exists. */
  passwordPolicy(namespace: string, name: string): Promise<string | undefined>;
}

/** Builds the backend of one mount; the host calls it again when the mount's options change. */
export type BackendFactory = (mount: MountInfo, context: EngineContext) => Backend;

/** The mount table a type belongs to: secrets engines (sys/mounts) or auth methods (sys/auth). */
export type MountTableKind = 'secret' | 'auth';

/** The table a mount belongs to. */
export function mountTable(mount: Pick<MountInfo, 'table'>): MountTableKind {
  return mount.table ?? 'secret';
}

/** Where engines of the core run: in the gateway process, beside the core. */
export const GATEWAY = 'gateway';

/** One mount type: everything the server needs to know to offer, host and reach it. */
export interface EngineType {
  /** The type users name when they enable a mount, e.g. "transit". */
  type: string;
  table: MountTableKind;
  /** `GATEWAY`, or the name of the engine service (its own app) that hosts the type. */
  runsIn: string;
  factory: BackendFactory;
  /** Mounted by the core in every namespace (system, token, cubbyhole); never enabled by hand. */
  builtin?: boolean;
  /** Other names of the same type (Vault's, e.g. "aws"), kept as the mount's type when a user enables it so. */
  aliases?: readonly string[];
  /** Names that enable this type with options set (Vault's "kv-v2": kv with version 2); the mount's type is `type`. */
  variants?: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/** What enabling a mount of some type name makes: its type, the name the mount keeps, options the name sets. */
export interface EnabledType {
  engine: EngineType;
  /** The mount's type: the name given for a type or an alias, the type for a variant. */
  type: string;
  options: Readonly<Record<string, string>>;
}

function registryKey(type: string, table: MountTableKind): string {
  return `${table}:${type}`;
}

/**
 * Every mount type this build knows. Config, the server command, the service processes, the
 * dispatcher and the mount tables all read it, so adding a type is one entry.
 */
export class EngineRegistry {
  private readonly byType = new Map<string, EngineType>();
  /** The types by their aliases and variants' names. */
  private readonly byOtherName = new Map<string, EngineType>();

  constructor(types: Iterable<EngineType>) {
    for (const type of types) {
      const key = registryKey(type.type, type.table);
      if (this.byType.has(key) || this.byOtherName.has(key)) throw new Error(`${type.table} type "${type.type}" is registered twice`);
      // A host builds backends by type alone, so one process place hosts each type name once.
      if ([...this.byType.values()].some((other) => other.type === type.type && other.runsIn === type.runsIn)) {
        throw new Error(`mount type "${type.type}" runs twice in "${type.runsIn}"`);
      }
      this.byType.set(key, type);
      for (const name of [...(type.aliases ?? []), ...Object.keys(type.variants ?? {})]) {
        const otherKey = registryKey(name, type.table);
        if (this.byType.has(otherKey) || this.byOtherName.has(otherKey)) throw new Error(`${type.table} type "${name}" is registered twice`);
        this.byOtherName.set(otherKey, type);
      }
    }
  }

  /** The type of that name (or alias) in a table. */
  get(type: string, table: MountTableKind): EngineType | undefined {
    const key = registryKey(type, table);
    const found = this.byType.get(key) ?? this.byOtherName.get(key);
    // A variant's name is for enabling only: a mount of the type carries the type's own name.
    return found && !found.variants?.[type] ? found : undefined;
  }

  /** What enabling a mount named `name` in `table` makes, if the name is one of this build. */
  enabling(name: string, table: MountTableKind): EnabledType | undefined {
    const engine = this.byType.get(registryKey(name, table)) ?? this.byOtherName.get(registryKey(name, table));
    if (!engine) return undefined;
    const options = engine.variants?.[name];
    return options ? { engine, type: engine.type, options } : { engine, type: name, options: {} };
  }

  /** The type a mount is of. */
  forMount(mount: Pick<MountInfo, 'type' | 'table'>): EngineType | undefined {
    return this.get(mount.type, mountTable(mount));
  }

  /** Types a user may enable in a table, sorted. */
  mountable(table: MountTableKind): string[] {
    return [...this.byType.values()]
      .filter((entry) => entry.table === table && !entry.builtin)
      .flatMap((entry) => [entry.type, ...(entry.aliases ?? [])])
      .sort();
  }

  /** Names of the engine services: every place a type runs other than the gateway, sorted. */
  services(): string[] {
    return [...new Set([...this.byType.values()].map((entry) => entry.runsIn))].filter((name) => name !== GATEWAY).sort();
  }

  /** The backend factories of the types that run in `runsIn` (the gateway or a service). */
  factoriesFor(runsIn: string): Record<string, BackendFactory> {
    return Object.fromEntries(
      [...this.byType.values()].filter((entry) => entry.runsIn === runsIn).flatMap((entry) => [entry.type, ...(entry.aliases ?? [])].map((name) => [name, entry.factory])),
    );
  }
}
