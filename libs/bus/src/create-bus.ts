import { MemoryBus } from './memory-bus';
import { Bus, BusLogger, NatsBusConfig } from './types';

/** NATS when configured (distributed), otherwise the in-process bus (all-in-one); the NATS client is loaded only then. */
export async function createBus(config?: NatsBusConfig, logger?: BusLogger): Promise<Bus> {
  if (!config) return new MemoryBus();
  const { NatsBus } = await import('./nats-bus');
  return NatsBus.connect(config, logger);
}
