import { MemoryBus } from './memory-bus';
import { NatsBus } from './nats-bus';
import { Bus, NatsBusConfig } from './types';

/** NATS when configured (distributed), otherwise the in-process bus (all-in-one). */
export async function createBus(config?: NatsBusConfig): Promise<Bus> {
  return config ? NatsBus.connect(config) : new MemoryBus();
}
