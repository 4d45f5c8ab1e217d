/** Markdown help text derived from declarations (the `help` half of a `?help=1` response). */
import { declaredOperations } from './operations';
import type { BackendDeclaration, FieldMap, PathDeclaration } from './types';

function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

function table(header: string[], rows: string[][]): string {
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.map(cell).join(' | ')} |`).join('\n');
}

/** A markdown table of the visible (non-deprecated) fields, or '' when there are none. */
export function fieldsTable(fields: FieldMap = {}): string {
  const rows = Object.entries(fields)
    .filter(([, field]) => !field.deprecated)
    .map(([name, field]) => [
      `\`${name}\``,
      field.type + (field.allowed ? ` (one of: ${field.allowed.join(', ')})` : ''),
      field.required ? 'yes' : 'no',
      field.default === undefined ? '' : `\`${JSON.stringify(field.default)}\``,
      field.description,
    ]);
  return rows.length === 0 ? '' : table(['Field', 'Type', 'Required', 'Default', 'Description'], rows);
}

/** Help for one path: synopsis, description, operations and fields. */
export function pathHelp(declaration: PathDeclaration): string {
  const operations = table(
    ['Operation', 'Summary'],
    declaredOperations(declaration).map((op) => [op.operation + (op.sudo ? ' (sudo)' : ''), op.summary]),
  );
  const fields = fieldsTable(declaration.fields);
  return [
    `## \`${declaration.pattern}\``,
    declaration.synopsis,
    declaration.aliases?.length ? `Also served at ${declaration.aliases.map((alias) => `\`${alias}\``).join(', ')}.` : undefined,
    declaration.description,
    `### Operations\n\n${operations}`,
    fields && `### Fields\n\n${fields}`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** A table of paths with their synopses, under a heading. */
export function pathsIndex(heading: string, declarations: PathDeclaration[]): string {
  const rows = declarations.map((declaration) => [`\`${declaration.pattern}\``, declaration.synopsis]);
  return `## ${heading}\n\n${table(['Path', 'Synopsis'], rows)}`;
}

/** Help for the mount root: the backend's own help and an index of its paths. */
export function mountHelp(backend: BackendDeclaration): string {
  return `${backend.help}\n\n${pathsIndex('Paths', backend.paths)}`;
}
