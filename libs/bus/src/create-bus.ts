import { MemoryBus } from './memory-bus';
import { NatsBus } from './nats-bus';
import { Bus, BusLogger, NatsBusConfig } from './types';

/** NATS when configured (distributed), otherwise the in-process bus (all-in-one). */
export async function createBus(config?: NatsBusConfig, logger?: BusLogger): Promise<Bus> {
  return config ? NatsBus.connect(config, logger) : new MemoryBus();
}
