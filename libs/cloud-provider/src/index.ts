export * from './provider';
export { rotateAccessKey } from './rotate-access-key';
