export * from './model';
export * from './destinations';
export * from './names';
export * from './outbox';
export * from './sys-paths';
