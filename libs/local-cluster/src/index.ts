export * from './processes';
export * from './topology';
