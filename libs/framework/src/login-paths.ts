import { PATH_OPERATIONS, resolveOperation, type PathOperation } from './operations';
import { compilePattern, type CompiledPattern } from './pattern';
import type { PathDeclaration } from './types';

/**
 * A backend's path patterns in match order, each with the operations it declares unauthenticated
 * (logins): what a gateway needs to know of a backend that runs elsewhere (an engine service, a
 * plugin process) to tell a login from any other request. Plain data: it travels over the bus.
 */
export type LoginDeclaration = readonly { pattern: string; operations: readonly PathOperation[] }[];

/** The declaration of `paths` (a backend's, its patterns and aliases in the order it matches them). */
export function loginDeclaration(paths: readonly { pattern: string; declaration: PathDeclaration }[]): LoginDeclaration {
  return paths.map(({ pattern, declaration }) => ({
    pattern,
    operations: PATH_OPERATIONS.filter((operation) => resolveOperation(declaration, operation)?.unauthenticated === true),
  }));
}

/** Answers "is this a login?" from a `LoginDeclaration` as the backend itself would: the first pattern matching decides. */
export class LoginPaths {
  private readonly routes: { pattern: CompiledPattern; operations: ReadonlySet<PathOperation> }[];

  constructor(declaration: LoginDeclaration) {
    this.routes = declaration.map(({ pattern, operations }) => ({ pattern: compilePattern(pattern), operations: new Set(operations) }));
  }

  isLogin(path: string, operation: PathOperation): boolean {
    const route = this.routes.find(({ pattern }) => pattern.match(path) !== null);
    return route?.operations.has(operation) ?? false;
  }
}
