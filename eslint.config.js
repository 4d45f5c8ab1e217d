const nx = require('@nx/eslint-plugin');
const tseslint = require('typescript-eslint');

/**
 * Who may import whom (tags in libs/* and apps/* project.json). Engines see only the shared
 * libraries, never the core or the gateway; the core and the server assemble engines; apps are
 * leaves (no app imports another). `@svc/testing` (scope:testing) is for tests alone: production
 * sources may not import it, test code may (`withTests`).
 */
function moduleBoundaries(withTests) {
  const testing = withTests ? ['scope:testing'] : [];
  return [
    'error',
    {
      allow: [],
      depConstraints: [
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['scope:shared', 'scope:engine', 'scope:gateway', 'scope:tooling', ...testing] },
        { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared', ...testing] },
        { sourceTag: 'scope:engine', onlyDependOnLibsWithTags: ['scope:shared', ...testing] },
        { sourceTag: 'scope:gateway', onlyDependOnLibsWithTags: ['scope:shared', 'scope:engine', 'scope:gateway', ...testing] },
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
