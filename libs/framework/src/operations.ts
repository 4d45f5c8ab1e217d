import type { Operation, OperationDeclaration, OperationHandler, PathDeclaration } from './types';

export type PathOperation = Exclude<Operation, 'help'>;

/** An operation with its flags spelled out, whichever form the declaration used. */
export interface ResolvedOperation {
  /** The declared operation that serves the request (an `update` may be served by `create`). */
  operation: PathOperation;
  handler: OperationHandler;
  summary: string;
  description?: string;
  sudo: boolean;
  rootNamespace: boolean;
  unauthenticated: boolean;
  forwardQuery: boolean;
}

export const PATH_OPERATIONS: readonly PathOperation[] = ['read', 'list', 'create', 'update', 'patch', 'delete'];

/** Writes arrive as `update` (POST/PUT); create vs update is decided by the existence check. */
export function isWrite(operation: Operation): operation is 'create' | 'update' {
  return operation === 'create' || operation === 'update';
}

/** Resolved operations by declaration: declarations live as long as their backends, and every request resolves one. */
const resolvedOperations = new WeakMap<PathDeclaration, Map<PathOperation, ResolvedOperation | null>>();

/** The declared operation that serves `operation`; create and update stand in for each other. */
export function resolveOperation(declaration: PathDeclaration, operation: PathOperation): ResolvedOperation | null {
  let resolved = resolvedOperations.get(declaration);
  if (!resolved) {
    resolved = new Map();
    resolvedOperations.set(declaration, resolved);
  }
  let found = resolved.get(operation);
  if (found === undefined) {
    found = resolveUncached(declaration, operation);
    resolved.set(operation, found);
  }
  return found;
}

function resolveUncached(declaration: PathDeclaration, operation: PathOperation): ResolvedOperation | null {
  const candidates: PathOperation[] =
    operation === 'create' ? ['create', 'update'] : operation === 'update' ? ['update', 'create'] : [operation];
  for (const candidate of candidates) {
    const declared = declaration.operations[candidate];
    if (declared) return normalize(declaration, candidate, declared);
  }
  return null;
}

/** Every operation the path declares, in a stable order. */
export function declaredOperations(declaration: PathDeclaration): ResolvedOperation[] {
  return PATH_OPERATIONS.flatMap((operation) => {
    const declared = declaration.operations[operation];
    return declared ? [normalize(declaration, operation, declared)] : [];
  });
}

function normalize(
  declaration: PathDeclaration,
  operation: PathOperation,
  declared: OperationDeclaration | OperationHandler,
): ResolvedOperation {
  const full: OperationDeclaration =
    typeof declared === 'function' ? { handler: declared, summary: declaration.synopsis } : declared;
  return {
    operation,
    handler: full.handler,
    summary: full.summary,
    ...(full.description !== undefined ? { description: full.description } : {}),
    sudo: full.sudo ?? false,
    rootNamespace: full.rootNamespace ?? false,
    unauthenticated: full.unauthenticated ?? false,
    forwardQuery: full.forwardQuery ?? false,
  };
}
