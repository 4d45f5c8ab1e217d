export * from './types';
export {
  parseDuration,
  createFieldData,
  unknownFields,
  unknownFieldsWarning,
  type FieldDataOptions,
} from './fields';
export { durationMilliseconds, formatDuration } from './duration';
export { parseBool } from './coerce';
export {
  compilePattern,
  openApiTemplates,
  relativeTemplate,
  type CompiledPattern,
  type PatternSegment,
  type RelativeTemplate,
} from './pattern';
export { Backend, permits, type HelpResponse } from './backend';
export {
  isWrite,
  resolveOperation,
  declaredOperations,
  PATH_OPERATIONS,
  type PathOperation,
  type ResolvedOperation,
} from './operations';
export {
  buildOpenApi,
  mergeOpenApi,
  openApiDocument,
  fieldSchema,
  HTTP_METHODS,
  type HttpMethod,
  type DocumentedRoute,
  type OpenApiDocument,
  type OpenApiInfo,
  type OperationObject,
  type ParameterObject,
  type PathItemObject,
  type SchemaObject,
} from './openapi';
export { fieldsTable, pathHelp, mountHelp } from './help';
export { listResponse, listPath, responseData, type ListPathOptions } from './responses';
export { recordPaths, type RecordPathsOptions } from './record-paths';
export { addressAllowed, validateCidrs } from './cidrs';
export {
  DEFAULT_TOKEN_SETTINGS,
  TOKEN_FIELDS,
  readTokenSettings,
  renewedAuth,
  tokenAuth,
  tokenSettingsData,
  type TokenSettings,
  type TokenType,
} from './token-fields';
export { normalizeMountPath } from './mount-path';
export { LoginPaths, loginDeclaration, type LoginDeclaration } from './login-paths';
