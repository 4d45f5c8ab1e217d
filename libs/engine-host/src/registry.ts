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

  constructor(types: Iterable<EngineType>) {
    for (const type of types) {
      const key = registryKey(type.type, type.table);
      if (this.byType.has(key)) throw new Error(`${type.table} type "${type.type}" is registered twice`);
      // A host builds backends by type alone, so one process place hosts each type name once.
      if ([...this.byType.values()].some((other) => other.type === type.type && other.runsIn === type.runsIn)) {
        throw new Error(`mount type "${type.type}" runs twice in "${type.runsIn}"`);
      }
      this.byType.set(key, type);
    }
  }

  /** The type of that name in a table. */
  get(type: string, table: MountTableKind): EngineType | undefined {
    return this.byType.get(registryKey(type, table));
  }

  /** The type a mount is of. */
  forMount(mount: Pick<MountInfo, 'type' | 'table'>): EngineType | undefined {
    return this.get(mount.type, mountTable(mount));
  }

  /** Types a user may enable in a table, sorted. */
  mountable(table: MountTableKind): string[] {
    return [...this.byType.values()].filter((entry) => entry.table === table && !entry.builtin).map((entry) => entry.type).sort();
  }

  /** Names of the engine services: every place a type runs other than the gateway, sorted. */
  services(): string[] {
    return [...new Set([...this.byType.values()].map((entry) => entry.runsIn))].filter((name) => name !== GATEWAY).sort();
  }

  /** The backend factories of the types that run in `runsIn` (the gateway or a service). */
  factoriesFor(runsIn: string): Record<string, BackendFactory> {
    return Object.fromEntries([...this.byType.values()].filter((entry) => entry.runsIn === runsIn).map((entry) => [entry.type, entry.factory]));
  }
}
