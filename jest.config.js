// Unit tests live beside the code (libs/*, apps/*); end-to-end suites live in test/ and talk HTTP
// to real server processes built into dist/ (run `npm run build` first; `npm test` does).
const tsJest = ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }];
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleNameMapper: { '^@svc/(.*)$': '<rootDir>/libs/$1/src/index.ts' },
};
// Nest 12, jose and openid-client ship as ES modules only, which Jest loads (natively,
// --experimental-vm-modules) only into tests that are ES modules themselves: the specs of the libs
// that import them are compiled as ES modules (the same unit project by name, so --selectProjects
// unit runs them).
const ESM_SPECS = ['<rootDir>/libs/server/src/**/*.spec.ts', '<rootDir>/libs/auth-jwt/src/**/*.spec.ts'];
const esm = {
  ...shared,
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec-esm.json', useESM: true }] },
};
module.exports = {
  // End-to-end tests start real processes; unit tests are far below this.
  testTimeout: 120_000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'], testPathIgnorePatterns: ['/node_modules/', '<rootDir>/libs/server/', '<rootDir>/libs/auth-jwt/'] },
    { ...esm, displayName: 'unit', testMatch: ESM_SPECS },
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.test.ts'], slowTestThreshold: 30 },
  ],
};
