export { createJwtBackendFactory, jwtAuthDeclaration, jwtBackendFactory } from './jwt-backend';
export type { JwtAuthOptions } from './method';
export type { JwtConfig, JwtRole } from './records';
