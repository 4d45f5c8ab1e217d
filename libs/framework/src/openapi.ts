/**
 * OpenAPI 3.0.3 documents derived from path declarations: one per help request, or one for many
 * mounts (the gateway's sys/internal/specs/openapi).
 */
import { NAME_PATTERN } from './coerce';
import { declaredOperations, type PathOperation, type ResolvedOperation } from './operations';
import type { FieldSchema, FieldType, PathDeclaration } from './types';

export type SchemaObject = Record<string, unknown>;

export interface ParameterObject {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  description?: string;
  schema: SchemaObject;
}

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  parameters?: ParameterObject[];
  requestBody?: { required: boolean; content: Record<string, { schema: SchemaObject }> };
  responses: Record<string, { description: string }>;
  [extension: `x-${string}`]: unknown;
}

export const HTTP_METHODS = ['get', 'post', 'patch', 'delete'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface PathItemObject extends Partial<Record<HttpMethod, OperationObject>> {
  summary?: string;
  description?: string;
  parameters?: ParameterObject[];
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

export interface OpenApiDocument {
  openapi: '3.0.3';
  info: OpenApiInfo;
  paths: Record<string, PathItemObject>;
}

/** One pattern variant placed in a document. */
export interface DocumentedRoute {
  /** Path template relative to the document's prefix, starting with '/'. */
  path: string;
  declaration: PathDeclaration;
  /** Parameters still present in `path`. */
  pathParams: string[];
  /** Every parameter the pattern captures (none of them is a body field). */
  capturedParams: readonly string[];
}

const TYPE_SCHEMAS: Record<FieldType, SchemaObject> = {
  string: { type: 'string' },
  int: { type: 'integer' },
  bool: { type: 'boolean' },
  duration: { oneOf: [{ type: 'integer', minimum: 0 }, { type: 'string', example: '24h' }] },
  'comma-string-list': { oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] },
  'comma-int-list': { oneOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'string' }] },
  list: { type: 'array', items: {} },
  map: { type: 'object' },
  'kv-pairs': {
    oneOf: [
      { type: 'object', additionalProperties: { type: 'string' } },
      { type: 'array', items: { type: 'string' } },
    ],
  },
  name: { type: 'string', pattern: NAME_PATTERN.source },
  time: { oneOf: [{ type: 'string', format: 'date-time' }, { type: 'integer' }] },
  header: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
};

const RESPONSES = { '200': { description: 'OK' }, '204': { description: 'Success, empty body' } };

const ID_VERBS: Record<PathOperation, string> = {
  read: 'read',
  list: 'list',
  create: 'write',
  update: 'write',
  patch: 'patch',
  delete: 'delete',
};

export function fieldSchema(field: FieldSchema): SchemaObject {
  const schema: SchemaObject = { ...TYPE_SCHEMAS[field.type], description: field.description };
  if (field.allowed && (field.type === 'string' || field.type === 'name')) schema.enum = [...field.allowed];
  if (field.default !== undefined && !(field.default instanceof Date)) schema.default = field.default;
  if (field.sensitive) schema['x-svc-sensitive'] = true;
  return schema;
}

/** One document for many backends, each under its prefix (e.g. "/secret/", "/sys/"). */
export function buildOpenApi(sections: { prefix: string; backend: { readonly type: string; describeRoutes(path: string): DocumentedRoute[] } }[], info: OpenApiInfo): OpenApiDocument {
  const document = openApiDocument(info);
  const operationIds = new Set<string>();
  for (const { prefix, backend } of sections) {
    addRoutes(document, backend.describeRoutes(''), { prefix, tag: backend.type, operationIds });
  }
  return document;
}

export function openApiDocument(info: OpenApiInfo): OpenApiDocument {
  return { openapi: '3.0.3', info, paths: {} };
}

interface Placement {
  prefix: string;
  tag: string;
  /** Shared across a document so ids stay unique. */
  operationIds: Set<string>;
}

/** Adds routes to a document; variants landing on the same path merge, the first operation per method wins. */
export function addRoutes(document: OpenApiDocument, routes: DocumentedRoute[], placement: Placement): void {
  for (const route of routes) {
    const path = joinPath(placement.prefix, route.path);
    const item = pathItem(route, path, placement);
    const existing = document.paths[path];
    if (existing) {
      for (const method of HTTP_METHODS) {
        const discarded = existing[method] && item[method];
        if (discarded) placement.operationIds.delete(discarded.operationId);
      }
    }
    document.paths[path] = existing ? { ...item, ...existing } : item;
  }
}

/**
 * Places an already built document (e.g. an engine's help document, relative to its mount) under
 * `prefix`; an operationId already taken gets the prefix appended, then a counter.
 */
export function mergeOpenApi(
  target: OpenApiDocument,
  source: OpenApiDocument,
  prefix: string,
  operationIds: Set<string>,
): void {
  for (const [path, item] of Object.entries(source.paths)) {
    const placed: PathItemObject = { ...item };
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const { operationId } = operation;
      const id = operationIds.has(operationId) ? `${operationId}-${slug(prefix)}` : operationId;
      placed[method] = { ...operation, operationId: uniqueId(id, operationIds) };
    }
    target.paths[joinPath(prefix, path)] = placed;
  }
}

function joinPath(prefix: string, path: string): string {
  const base = `/${prefix}`.replace(/\/+$/, '').replace(/^\/+/, '/');
  return base === '/' ? path : `${base}${path}`;
}

function pathItem(route: DocumentedRoute, path: string, placement: Placement): PathItemObject {
  const { declaration } = route;
  const fields = declaration.fields ?? {};
  const item: PathItemObject = { summary: declaration.synopsis };
  if (declaration.description) item.description = declaration.description;
  if (route.pathParams.length > 0) {
    item.parameters = route.pathParams.map((name) => ({
      name,
      in: 'path',
      required: true,
      description: fields[name]?.description ?? '',
      schema: fields[name] ? fieldSchema(fields[name]) : { type: 'string' },
    }));
  }
  const bodyFields = Object.entries(fields).filter(
    ([name, field]) => !field.deprecated && !route.capturedParams.includes(name),
  );
  const operations = new Map(declaredOperations(declaration).map((op) => [op.operation, op]));
  const operationFor = (served: ResolvedOperation, extra: Partial<OperationObject> = {}): OperationObject => ({
    ...operationObject(served, path, placement),
    ...extra,
  });

  const read = operations.get('read');
  const list = operations.get('list');
  const readOrList = read ?? list;
  if (readOrList) {
    const parameters = [
      ...(list ? [listParameter(read === undefined)] : []),
      ...(readOrList.forwardQuery || list?.forwardQuery ? queryParameters(bodyFields) : []),
    ];
    item.get = operationFor(readOrList, { ...flags([read, list]), ...(parameters.length > 0 ? { parameters } : {}) });
  }
  const write = operations.get('update') ?? operations.get('create');
  if (write) item.post = operationFor(write, requestBody(bodyFields, declaration, 'application/json'));
  const patch = operations.get('patch');
  if (patch) item.patch = operationFor(patch, requestBody(bodyFields, declaration, 'application/merge-patch+json'));
  const remove = operations.get('delete');
  if (remove) item.delete = operationFor(remove);
  return item;
}

function operationObject(served: ResolvedOperation, path: string, placement: Placement): OperationObject {
  return {
    operationId: uniqueId(`${ID_VERBS[served.operation]}-${slug(path)}`, placement.operationIds),
    summary: served.summary,
    ...(served.description ? { description: served.description } : {}),
    tags: [placement.tag],
    responses: RESPONSES,
    ...flags([served]),
  };
}

/** Vendor extensions for the flags the gateway enforces; a merged GET carries the flags of both. */
function flags(operations: (ResolvedOperation | undefined)[]): Record<`x-${string}`, true> {
  const present = operations.filter((op): op is ResolvedOperation => op !== undefined);
  const result: Record<`x-${string}`, true> = {};
  if (present.some((op) => op.sudo)) result['x-svc-sudo'] = true;
  if (present.some((op) => op.rootNamespace)) result['x-svc-root-namespace'] = true;
  if (present.some((op) => op.unauthenticated)) result['x-svc-unauthenticated'] = true;
  return result;
}

/** LIST is GET with list=true: required when the path only lists, a switch when it also reads. */
function listParameter(listOnly: boolean): ParameterObject {
  const base = { name: 'list', in: 'query' } as const;
  return listOnly
    ? { ...base, required: true, description: 'Must be `true`.', schema: { type: 'string', enum: ['true'] } }
    : { ...base, required: false, description: 'List keys instead of reading.', schema: { type: 'boolean' } };
}

function queryParameters(fields: [string, FieldSchema][]): ParameterObject[] {
  return fields.map(([name, field]) => ({
    name,
    in: 'query',
    required: false,
    description: field.description,
    schema: fieldSchema(field),
  }));
}

function requestBody(
  fields: [string, FieldSchema][],
  declaration: PathDeclaration,
  contentType: string,
): Partial<OperationObject> {
  if (fields.length === 0 && !declaration.acceptsAnyFields) return {};
  const required = fields.filter(([, field]) => field.required).map(([name]) => name);
  const schema: SchemaObject = {
    type: 'object',
    properties: Object.fromEntries(fields.map(([name, field]) => [name, fieldSchema(field)])),
    ...(required.length > 0 ? { required } : {}),
  };
  return { requestBody: { required: required.length > 0, content: { [contentType]: { schema } } } };
}

function slug(path: string): string {
  return path.replace(/[{}]/g, '').split(/[^A-Za-z0-9]+/).filter(Boolean).join('-').toLowerCase() || 'root';
}

function uniqueId(base: string, taken: Set<string>): string {
  let id = base;
  for (let suffix = 2; taken.has(id); suffix++) id = `${base}-${suffix}`;
  taken.add(id);
  return id;
}
