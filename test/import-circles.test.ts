/**
 * No import circle among the production source files of any lib or app: each part reads from the
 * files it imports down to its foundations, never back (type-only imports count too, as a reader
 * follows them the same way). Specs and test-only helpers are left out.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'testing' || name === 'node_modules' ? [] : sourceFiles(file);
    return /\.tsx?$/.test(name) && !/\.spec\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [file] : [];
  });
}

/** The files of the repository a file imports by a relative path. */
function relativeImports(file: string, known: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .filter(({ fileName }) => fileName.startsWith('.'))
    .flatMap(({ fileName }) => {
      const base = path.resolve(path.dirname(file), fileName);
      return [`${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')].filter((candidate) => known.has(candidate)).slice(0, 1);
    });
}

/** The strongly connected groups of more than one file (Tarjan's algorithm). */
function circles(graph: ReadonlyMap<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(path.relative(root, member));
    } while (member !== node);
    if (group.length > 1) found.push(group.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('imports between files', () => {
  it('form no circle in any lib or app', () => {
    const files = ['libs', 'apps'].flatMap((top) => readdirSync(path.join(root, top)).map((name) => path.join(root, top, name))).flatMap((dir) => sourceFiles(dir));
    const known = new Set(files);
    const graph = new Map(files.map((file) => [file, relativeImports(file, known)]));
    expect(graph.size).toBeGreaterThan(500);
    expect(circles(graph)).toEqual([]);
  });
});
