import { loginDeclaration, type LoginDeclaration } from './login-paths';
import { ServiceError } from '@svc/api-contract';
import { createFieldData, unknownFields, unknownFieldsWarning } from './fields';
import { mountHelp, pathHelp, pathsIndex } from './help';
import { addRoutes, openApiDocument, type DocumentedRoute, type OpenApiDocument } from './openapi';
import { isWrite, resolveOperation, type PathOperation, type ResolvedOperation } from './operations';
import { compilePattern, relativeTemplate, type CompiledPattern } from './pattern';
import type {
  AuthResponse,
  BackendDeclaration,
  Capability,
  FieldData,
  FieldMap,
  PathDeclaration,
  Request,
  Response,
  SecretType,
} from './types';

export interface HelpResponse {
  help: string;
  openapi: OpenApiDocument;
}

interface Route {
  declaration: PathDeclaration;
  pattern: CompiledPattern;
}

interface MatchedRoute extends Route {
  params: Record<string, string>;
}

const MATCH_CACHE_SIZE = 2048;

/** The schema of a path that declares no fields: one object, so its compiled form is made once. */
const NO_FIELDS: FieldMap = Object.freeze({});

/** Whether the capability set grants `operation`; `deny` wins, `root` grants everything. */
export function permits(capabilities: ReadonlySet<Capability>, operation: PathOperation): boolean {
  if (capabilities.has('deny')) return false;
  return capabilities.has('root') || capabilities.has(operation);
}

/** A mounted backend: routes requests to the first declaration whose pattern matches. */
export class Backend {
  private readonly routes: Route[];
  private readonly matches = new Map<string, MatchedRoute | null>();

  constructor(readonly declaration: BackendDeclaration) {
    // Compiling up front turns a malformed pattern into a startup error, not a request-time one.
    this.routes = declaration.paths.flatMap((path) =>
      [path.pattern, ...(path.aliases ?? [])].map((pattern) => ({ declaration: path, pattern: compilePattern(pattern) })),
    );
  }

  get type(): string {
    return this.declaration.type;
  }

  /**
   * Not an async function: a read's answer is its handler's own promise, unless the answer needs
   * something added (every request of every engine passes here, and an async frame is an allocation).
   */
  handle(req: Request): Promise<Response | undefined> {
    try {
      if (req.operation === 'help') return Promise.resolve({ raw: this.help(req.path) });
      const route = this.match(req.path);
      if (!route) throw ServiceError.unsupportedPath();
      const { declaration, params } = route;
      const requested = req.operation;

      const declared = resolveOperation(declaration, requested);
      if (!declared) throw ServiceError.methodNotAllowed();
      const write = isWrite(requested);
      // Refuse a write outright when neither capability could allow it, before looking at data.
      if (write && !permits(req.capabilities, 'create') && !permits(req.capabilities, 'update')) throw ServiceError.forbidden();
      const fields = createFieldData(declaration.fields ?? NO_FIELDS, req.data, params, { enforceRequired: write });
      if (!write) return this.serveOperation(declaration, declared, req, fields, params);
      const operation = this.writeOperation(declaration, req, fields);
      const serve = (resolved: WriteOperation) =>
        // create and update stand in for each other, so the resolved write is always served
        this.serveOperation(declaration, resolveOperation(declaration, resolved) ?? declared, resolved === requested ? req : { ...req, operation: resolved }, fields, params);
      return typeof operation === 'string' ? serve(operation) : operation.then(serve);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private serveOperation(declaration: PathDeclaration, served: ResolvedOperation, req: Request, fields: FieldData, params: Record<string, string>): Promise<Response | undefined> {
    const ignored = declaration.acceptsAnyFields ? [] : unknownFields(declaration.fields ?? NO_FIELDS, req.data, params);
    const answer = served.handler(req, fields);
    if (!declaration.dataAtTopLevel && ignored.length === 0) return answer;
    return answer.then((answered) => {
      const response = declaration.dataAtTopLevel && answered ? { ...answered, dataAtTopLevel: true } : answered;
      return ignored.length === 0 ? response : withWarning(response, unknownFieldsWarning(ignored));
    });
  }

  /** Create or update, per the existence check (which may answer at once); the caller must hold that capability. */
  private writeOperation(declaration: PathDeclaration, req: Request, fields: FieldData): WriteOperation | Promise<WriteOperation> {
    if (!declaration.existenceCheck) return permitted(req, declaration.operations.create && !declaration.operations.update ? 'create' : 'update');
    if (declaration.createAndUpdateAlike && permits(req.capabilities, 'create') && permits(req.capabilities, 'update')) return 'update';
    const exists = declaration.existenceCheck(req, fields);
    if (typeof exists === 'boolean') return permitted(req, exists ? 'update' : 'create');
    return exists.then((found) => permitted(req, found ? 'update' : 'create'));
  }

  /**
   * The declared operation that would serve `operation` on `path`, with its flags, so the gateway can
   * check sudo, root-namespace and unauthenticated access before dispatching. Null when the path does
   * not match or the operation is not declared.
   */
  operationInfo(path: string, operation: PathOperation): ResolvedOperation | null {
    const route = this.match(path);
    return route ? resolveOperation(route.declaration, operation) : null;
  }

  /** Its patterns with the operations each declares unauthenticated, for a gateway that does not run it. */
  logins(): LoginDeclaration {
    return loginDeclaration(this.routes.map(({ pattern, declaration }) => ({ pattern: pattern.source, declaration })));
  }

  /** The declaration's lifecycle hooks; a backend that declares none has nothing to do. */
  async initialize(): Promise<void> {
    await this.declaration.initialize?.();
  }

  invalidate(key: string): void {
    this.declaration.invalidate?.(key);
  }

  async periodic(): Promise<void> {
    await this.declaration.periodic?.();
  }

  async cleanup(): Promise<void> {
    await this.declaration.cleanup?.();
  }

  async renewAuth(req: Request, auth: AuthResponse): Promise<AuthResponse> {
    if (!this.declaration.renewAuth) throw ServiceError.badRequest(`auth method "${this.type}" does not renew its tokens`);
    return this.declaration.renewAuth(req, auth);
  }

  async renewSecret(req: Request, type: string, internalData: Record<string, unknown>): Promise<Response | undefined> {
    const secret = this.secretType(type);
    if (!secret.renew) throw ServiceError.badRequest(`secret type "${type}" is not renewable`);
    return secret.renew(req, internalData);
  }

  async revokeSecret(req: Request, type: string, internalData: Record<string, unknown>): Promise<void> {
    await this.secretType(type).revoke(req, internalData);
  }

  private secretType(type: string): SecretType {
    const secret = Object.hasOwn(this.declaration.secrets ?? {}, type) ? this.declaration.secrets?.[type] : undefined;
    if (!secret) throw ServiceError.badRequest(`unknown secret type "${type}"`);
    return secret;
  }

  /**
   * Help for a path relative to the mount: markdown text (the mount's help at the root, the matching
   * declaration's help, or an index of the paths below) and an OpenAPI document of the paths at or
   * below it, relative to it.
   */
  help(relativePath: string): HelpResponse {
    const path = relativePath.replace(/^\/+/, '');
    const routes = this.describeRoutes(path);
    const matched = this.match(path);
    if (path !== '' && !matched && routes.length === 0) throw ServiceError.unsupportedPath();

    const below = [...new Set(routes.map((route) => route.declaration))];
    let help: string;
    if (path === '') help = mountHelp(this.declaration);
    else if (matched) help = pathHelp(matched.declaration);
    else help = pathsIndex(`Paths under \`${path}\``, below);
    const openapi = openApiDocument({ title: path === '' ? this.type : `${this.type}: ${path}`, version: '1' });
    addRoutes(openapi, routes, { prefix: '', tag: this.type, operationIds: new Set() });
    return { help, openapi };
  }

  /** Every pattern variant at or below `relativePath`, with its template relative to that path. */
  describeRoutes(relativePath: string): DocumentedRoute[] {
    return this.routes.flatMap(({ declaration, pattern }) =>
      pattern.variants.flatMap((variant) => {
        const placed = relativeTemplate(variant, relativePath);
        if (!placed) return [];
        const pathParams = variant.flatMap((segment) =>
          segment.kind !== 'literal' && !placed.bound.includes(segment.name) ? [segment.name] : [],
        );
        return [{ path: placed.path, declaration, pathParams, capturedParams: pattern.paramNames }];
      }),
    );
  }

  /** Matches are remembered per path (bounded): a request matches twice (flags, then handling). */
  private match(path: string): MatchedRoute | undefined {
    const cached = this.matches.get(path);
    if (cached !== undefined) return cached ?? undefined;
    let found: MatchedRoute | null = null;
    for (const route of this.routes) {
      const params = route.pattern.match(path);
      if (params) {
        found = { ...route, params };
        break;
      }
    }
    if (this.matches.size >= MATCH_CACHE_SIZE) this.matches.clear();
    this.matches.set(path, found);
    return found ?? undefined;
  }
}

type WriteOperation = 'create' | 'update';

function permitted(req: Request, operation: WriteOperation): WriteOperation {
  if (!permits(req.capabilities, operation)) throw ServiceError.forbidden();
  return operation;
}

function withWarning(response: Response | undefined, warning: string): Response {
  return { ...response, warnings: [...(response?.warnings ?? []), warning] };
}
