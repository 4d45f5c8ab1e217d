export * from './archive';
export * from './config';
export * from './targets';
export * from './scheduler';
export * from './sys-paths';
export { TARGET_CALL_TIMEOUT_MS } from './cloud/object-target';
