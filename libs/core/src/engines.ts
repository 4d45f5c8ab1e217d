import type { BackendFactory } from '@svc/engine-host';
import type { ServiceName } from '@svc/config';

/**
 * Where a mount type runs. Core engines (kv, system, token, cubbyhole) run inside the gateway;
 * service engines (transit, database, ...) run in their own app and are reached over the bus.
 */
export type EngineDefinition =
  | { kind: 'core'; table: 'secret' | 'auth'; create: BackendFactory }
  | { kind: 'service'; table: 'secret' | 'auth'; service: ServiceName };

export class EngineRegistry {
  private readonly engines = new Map<string, EngineDefinition>();

  register(type: string, definition: EngineDefinition): this {
    this.engines.set(type, definition);
    return this;
  }

  get(type: string): EngineDefinition | undefined {
    return this.engines.get(type);
  }

  types(table: 'secret' | 'auth'): string[] {
    return [...this.engines.entries()].filter(([, d]) => d.table === table).map(([t]) => t);
  }
}
