const nx = require('@nx/eslint-plugin');
const tseslint = require('typescript-eslint');

/**
 * Who may import whom (tags in libs/* and apps/* project.json); arrows only point down:
 *   shared       the foundations (storage, framework, bus, config, seal, engine host, ...)
 *   engine       a secrets engine; auth-method: an auth method. They see only shared libs, so an
 *                engine never reaches into the core, a feature or another engine.
 *   feature      a part beside the core (replication, snapshots, the sync worker): shared and features
 *   core         the gateway's core (seal lifecycle, router, request handling, sys/): shared, features
 *   edge         the HTTP edge (listeners, the pipeline to a LogicalRequest): shared and the core;
 *                the core never imports it
 *   server       composes a process from all of them; apps are leaves (no app imports another)
 * `@svc/testing` (scope:testing) is for tests alone: production sources may not import it, test code
 * may (`withTests`). test/lint-boundaries.test.ts proves that a forbidden import fails lint.
 */
function moduleBoundaries(withTests) {
  const testing = withTests ? ['scope:testing'] : [];
  return [
    'error',
    {
      // A lib's specs may start the provider emulators under test/emulators (test code of no project).
      allow: withTests ? ['../../../test/emulators/*', '../../../../test/emulators/*'] : [],
      depConstraints: [
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['scope:shared', 'scope:server', 'scope:tooling', ...testing] },
        { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared', ...testing] },
        { sourceTag: 'scope:engine', onlyDependOnLibsWithTags: ['scope:shared', ...testing] },
        { sourceTag: 'scope:auth-method', onlyDependOnLibsWithTags: ['scope:shared', ...testing] },
        { sourceTag: 'scope:feature', onlyDependOnLibsWithTags: ['scope:shared', 'scope:feature', ...testing] },
        { sourceTag: 'scope:core', onlyDependOnLibsWithTags: ['scope:shared', 'scope:feature', ...testing] },
        { sourceTag: 'scope:edge', onlyDependOnLibsWithTags: ['scope:shared', 'scope:core', ...testing] },
        { sourceTag: 'scope:server', onlyDependOnLibsWithTags: ['scope:shared', 'scope:engine', 'scope:auth-method', 'scope:feature', 'scope:core', 'scope:edge', ...testing] },
        // Starting local server processes (svc cluster, tests): the server's own code is not needed.
        { sourceTag: 'scope:tooling', onlyDependOnLibsWithTags: ['scope:shared'] },
        { sourceTag: 'scope:testing', onlyDependOnLibsWithTags: ['scope:shared', 'scope:tooling', 'scope:testing'] },
      ],
    },
  ];
}

const UI_FILES = 'apps/ui/src/**/*.{ts,tsx}';

/** Test code: unit specs, test-only helpers of a lib (src/testing/), libs/testing, e2e tests and the bench. */
const TEST_FILES = ['**/*.spec.ts', '**/testing/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'];

module.exports = tseslint.config(
  { ignores: ['**/dist/**', 'dist-bench/**', '**/node_modules/**', 'coverage/**', '.nx/**', 'bench/**/*.js', 'bin/**'] },
  ...tseslint.configs.recommended.map((config) => ({ ...config, files: ['**/*.ts', '**/*.tsx'] })),
  {
    files: ['**/*.ts'],
    ignores: [UI_FILES],
    plugins: { '@nx': nx },
    // Type information for the promise rules: one program over tsconfig.json, which includes every TS file.
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: __dirname } },
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries(false),
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The web UI is browser code with its own compiler settings (DOM, JSX); it imports no lib.
    files: [UI_FILES],
    languageOptions: { parserOptions: { project: './apps/ui/tsconfig.json', tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: TEST_FILES,
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries(true),
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
