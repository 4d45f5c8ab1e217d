// Unit tests live beside the code (libs/*, apps/*); end-to-end suites live in test/ and talk HTTP
// to real server processes built into dist/ (run `npm run build` first; `npm test` does).
const tsJest = ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }];
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleNameMapper: { '^@svc/(.*)$': '<rootDir>/libs/$1/src/index.ts' },
};
module.exports = {
  // End-to-end tests start real processes; unit tests are far below this.
  testTimeout: 120_000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'] },
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.test.ts'], slowTestThreshold: 30 },
  ],
};
