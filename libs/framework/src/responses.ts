import type { Response } from './types';

/** The response of a LIST: `data.keys`, plus `data.key_info` when details are given. */
export function listResponse(keys: string[], keyInfo?: Record<string, unknown>): Response {
  return { data: keyInfo === undefined ? { keys } : { keys, key_info: keyInfo } };
}
