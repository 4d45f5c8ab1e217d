export * from './archive';
export * from './config';
export * from './targets';
export * from './scheduler';
