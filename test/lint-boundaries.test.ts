/**
 * The import rules between parts (tags in each project.json, constraints in eslint.config.js) are
 * enforced by lint: a source file of one part importing a part it may not fails `npm run lint`.
 * Each case lints a short text as if it were a file of the importing part.
 */
import path from 'node:path';
import { ESLint } from 'eslint';

const root = path.resolve(__dirname, '..');
// Only the boundary rule is asked about: the type-aware rules would build the whole program first.
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    languageOptions: { parserOptions: { project: false, projectService: false } },
    rules: { '@typescript-eslint/no-floating-promises': 'off', '@typescript-eslint/no-misused-promises': 'off' },
  },
});

/** The boundary errors of `file` (a path in the repository) if it imported `name` from `lib`. */
async function boundaryErrors(file: string, lib: string, name: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import { ${name} } from '${lib}';\nexport const used = ${name};\n`, { filePath: path.join(root, file) });
  return result.messages.filter((message) => message.ruleId === '@nx/enforce-module-boundaries').map((message) => message.message);
}

describe('import boundaries between parts', () => {
  it.each([
    ['the core imports the HTTP edge', 'libs/core/src/index.ts', '@svc/edge', 'RequestPipeline', 'scope:core'],
    ['an engine imports a feature', 'libs/engine-kv/src/index.ts', '@svc/replication', 'Replication', 'scope:engine'],
    ['an engine imports the core', 'libs/engine-transit/src/index.ts', '@svc/core', 'composeCore', 'scope:engine'],
    ['an auth method imports an engine', 'libs/auth-userpass/src/index.ts', '@svc/engine-kv', 'kvBackendFactory', 'scope:auth-method'],
    ['a feature imports the core', 'libs/snapshot/src/index.ts', '@svc/core', 'composeCore', 'scope:feature'],
    ['a shared lib imports the server', 'libs/storage/src/index.ts', '@svc/server', 'runAsMain', 'scope:shared'],
    ['production code imports the test helpers', 'libs/core/src/index.ts', '@svc/testing', 'testMount', 'scope:core'],
  ])('fails lint when %s', async (_case, file, lib, name, tag) => {
    const errors = await boundaryErrors(file, lib, name);
    expect(errors).toEqual([expect.stringContaining(`A project tagged with "${tag}" can only depend on libs tagged with`)]);
  });

  it.each([
    ['the edge imports the core', 'libs/edge/src/index.ts', '@svc/core', 'composeCore'],
    ['the core imports a feature', 'libs/core/src/index.ts', '@svc/snapshot', 'createSnapshot'],
    ['the server imports the edge', 'libs/server/src/index.ts', '@svc/edge', 'RequestPipeline'],
    ['a spec imports the test helpers', 'libs/core/src/request/request-handler.spec.ts', '@svc/testing', 'testMount'],
  ])('passes when %s', async (_case, file, lib, name) => {
    expect(await boundaryErrors(file, lib, name)).toEqual([]);
  });
});
