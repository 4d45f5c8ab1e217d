import type { OperationDeclaration, PathDeclaration, Response } from './types';

/** A response's data as an object, whichever form the engine gave it in (an object, or JSON text in `dataJson`). */
export function responseData(response: Response | undefined): Record<string, unknown> | null | undefined {
  return response?.dataJson === undefined ? response?.data : (JSON.parse(response.dataJson) as Record<string, unknown>);
}

/** The response of a LIST: `data.keys`, plus `data.key_info` when details are given. */
export function listResponse(keys: string[], keyInfo?: Record<string, unknown>): Response {
  return { data: keyInfo === undefined ? { keys } : { keys, key_info: keyInfo } };
}

export interface ListPathOptions extends Pick<OperationDeclaration, 'summary' | 'sudo'> {
  /** The collection's directory, ending in `/`. */
  pattern: string;
  synopsis: string;
  /** The names the LIST answers. */
  names: () => Promise<string[]>;
}

/** The declaration of a collection's LIST path, which answers the names it is given. */
export function listPath({ pattern, synopsis, summary, sudo, names }: ListPathOptions): PathDeclaration {
  return { pattern, synopsis, operations: { list: { summary, sudo, handler: async () => listResponse(await names()) } } };
}
