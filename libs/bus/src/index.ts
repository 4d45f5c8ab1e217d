export * from './types';
export type { NatsBus } from './nats-bus';
export { MemoryBus, type MemoryBusOptions } from './memory-bus';
export { MemoryBusHub, type BusHub } from './memory-hub';
export { BusRelay, RemoteBusHub, type HubMessage, type IpcChannel } from './process-hub';
export { createBus } from './create-bus';
export { encodeJson, decodeJson, requestJson } from './json';
export { ERROR_HEADER, REQUEST_ID_HEADER, DEFAULT_REQUEST_TIMEOUT_MS } from './wire';
