/**
 * How a key is split into shares. In a module of its own so that shares.ts and rekey.ts, which both
 * use it, do not import each other.
 */
export interface KeySplit {
  shares: number;
  threshold: number;
}
