/**
 * Username templates: the subset of Go's template language that Vault's username templates use.
 *
 * - values: fields (`{{.DisplayName}}`), strings (`"x"`), integers, parenthesized pipelines;
 * - pipelines: `{{.RoleName | truncate 8 | lowercase}}` (the piped value is the last argument);
 * - functions: `random N`, `unix_time`, `unix_time_millis`, `uuid`, `truncate N`, `uppercase`,
 *   `lowercase`, `replace "old" "new"`, `printf "fmt" args...` (`%s`, `%d`, `%v`), `eq`, `ne`;
 * - control: `{{if PIPELINE}}...{{else if PIPELINE}}...{{else}}...{{end}}`, and `{{-`/`-}}` to
 *   trim the whitespace beside an action.
 */
import { randomInt, randomUUID } from 'node:crypto';

/** The fields a template may read, e.g. `{ DisplayName, RoleName }`. */
export type TemplateFields = Readonly<Record<string, string>>;

export class TemplateError extends Error {}

type Value = string | number | boolean;

type Token = { kind: 'string'; value: string } | { kind: 'number'; value: number } | { kind: 'field'; name: string } | { kind: 'word'; name: string } | { kind: '(' | ')' | '|' };

type Operand = { kind: 'literal'; value: Value } | { kind: 'field'; name: string } | { kind: 'function'; name: string } | { kind: 'pipeline'; pipeline: Pipeline };
type Pipeline = Operand[][];

type Node = { kind: 'text'; text: string } | { kind: 'action'; pipeline: Pipeline } | { kind: 'if'; condition: Pipeline; then: Node[]; otherwise: Node[] };

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN = /\s*(?:"((?:[^"\\]|\\.)*)"|`([^`]*)`|(-?\d+)(?![\w.])|\.([A-Za-z_]\w*)|([A-Za-z_]\w*)|([()|]))/y;

function lex(source: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < source.length) {
    if (/^\s*$/.test(source.slice(TOKEN.lastIndex))) break;
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(source);
    if (!match) throw new TemplateError(`unexpected "${source.slice(at).trim()}"`);
    const [, quoted, raw, number, field, word, punctuation] = match;
    if (quoted !== undefined) tokens.push({ kind: 'string', value: JSON.parse(`"${quoted}"`) as string });
    else if (raw !== undefined) tokens.push({ kind: 'string', value: raw });
    else if (number !== undefined) tokens.push({ kind: 'number', value: Number(number) });
    else if (field !== undefined) tokens.push({ kind: 'field', name: field });
    else if (word !== undefined) tokens.push({ kind: 'word', name: word });
    else tokens.push({ kind: punctuation as '(' | ')' | '|' });
  }
  return tokens;
}

class PipelineParser {
  private at = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Pipeline {
    const pipeline = this.pipeline();
    if (this.at < this.tokens.length) throw new TemplateError(`unexpected "${this.tokens[this.at].kind}"`);
    return pipeline;
  }

  private pipeline(): Pipeline {
    const commands: Operand[][] = [this.command()];
    while (this.tokens[this.at]?.kind === '|') {
      this.at++;
      commands.push(this.command());
    }
    return commands;
  }

  private command(): Operand[] {
    const operands: Operand[] = [];
    for (let token = this.tokens[this.at]; token && token.kind !== '|' && token.kind !== ')'; token = this.tokens[this.at]) {
      this.at++;
      switch (token.kind) {
        case 'string':
        case 'number':
          operands.push({ kind: 'literal', value: token.value });
          break;
        case 'field':
          operands.push({ kind: 'field', name: token.name });
          break;
        case 'word':
          operands.push(token.name === 'true' || token.name === 'false' ? { kind: 'literal', value: token.name === 'true' } : { kind: 'function', name: token.name });
          break;
        case '(': {
          const pipeline = this.pipeline();
          if (this.tokens[this.at]?.kind !== ')') throw new TemplateError('unclosed "("');
          this.at++;
          operands.push({ kind: 'pipeline', pipeline });
          break;
        }
      }
    }
    if (operands.length === 0) throw new TemplateError('empty command');
    return operands;
  }
}

/** Splits the template into text and `{{ }}` actions, applying trim markers, and builds the tree. */
function parse(template: string): Node[] {
  const parts: Array<{ text: string } | { action: string }> = [];
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{{');
    if (open < 0) {
      parts.push({ text: rest });
      break;
    }
    const close = rest.indexOf('}}', open + 2);
    if (close < 0) throw new TemplateError('unclosed "{{"');
    let text = rest.slice(0, open);
    let action = rest.slice(open + 2, close);
    if (action.startsWith('- ')) text = text.trimEnd();
    let after = rest.slice(close + 2);
    if (action.endsWith(' -')) after = after.trimStart();
    action = action.replace(/^- /, '').replace(/ -$/, '').trim();
    parts.push({ text }, { action });
    rest = after;
  }

  let at = 0;
  const block = (terminators: readonly string[]): { nodes: Node[]; end: string } => {
    const nodes: Node[] = [];
    while (at < parts.length) {
      const part = parts[at++];
      if ('text' in part) {
        if (part.text) nodes.push({ kind: 'text', text: part.text });
        continue;
      }
      const keyword = /^(if|else if|else|end)\b\s*/.exec(part.action);
      if (!keyword) {
        nodes.push({ kind: 'action', pipeline: new PipelineParser(lex(part.action)).parse() });
        continue;
      }
      const word = keyword[1];
      if (word === 'if') {
        nodes.push(conditional(part.action.slice(keyword[0].length)));
        continue;
      }
      if (!terminators.includes(word)) throw new TemplateError(`unexpected "{{${word}}}"`);
      at--; // the caller reads the terminator again
      return { nodes, end: word };
    }
    if (terminators.length > 0) throw new TemplateError('"{{if}}" without "{{end}}"');
    return { nodes, end: '' };
  };
  const conditional = (condition: string): Node => {
    const then = block(['else if', 'else', 'end']);
    const terminator = parts[at++] as { action: string };
    let otherwise: Node[] = [];
    if (then.end === 'else if') {
      otherwise = [conditional(terminator.action.replace(/^else if\s*/, ''))];
      return { kind: 'if', condition: new PipelineParser(lex(condition)).parse(), then: then.nodes, otherwise };
    }
    if (then.end === 'else') {
      otherwise = block(['end']).nodes;
      at++;
    }
    return { kind: 'if', condition: new PipelineParser(lex(condition)).parse(), then: then.nodes, otherwise };
  };
  return block([]).nodes;
}

function integer(name: string, value: Value | undefined): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new TemplateError(`"${name}" takes one non-negative integer`);
  return value;
}

function text(name: string, value: Value | undefined): string {
  if (value === undefined) throw new TemplateError(`"${name}" is missing an argument`);
  return String(value);
}

function arity(name: string, args: Value[], count: number): void {
  if (args.length !== count) throw new TemplateError(`"${name}" takes ${count} argument${count === 1 ? '' : 's'}, not ${args.length}`);
}

/** Go's fmt verbs the templates use. */
function printf(format: string, args: Value[]): string {
  let next = 0;
  return format.replace(/%([%sdv])/g, (_match, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) return `%!${verb}(MISSING)`;
    return String(args[next++]);
  });
}

const FUNCTIONS: Record<string, (args: Value[]) => Value> = {
  random: (args) => {
    arity('random', args, 1);
    return Array.from({ length: integer('random', args[0]) }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('');
  },
  unix_time: (args) => {
    arity('unix_time', args, 0);
    return String(Math.floor(Date.now() / 1000));
  },
  unix_time_millis: (args) => {
    arity('unix_time_millis', args, 0);
    return String(Date.now());
  },
  uuid: (args) => {
    arity('uuid', args, 0);
    return randomUUID();
  },
  truncate: (args) => {
    arity('truncate', args, 2);
    return text('truncate', args[1]).slice(0, integer('truncate', args[0]));
  },
  uppercase: (args) => {
    arity('uppercase', args, 1);
    return text('uppercase', args[0]).toUpperCase();
  },
  lowercase: (args) => {
    arity('lowercase', args, 1);
    return text('lowercase', args[0]).toLowerCase();
  },
  replace: (args) => {
    arity('replace', args, 3);
    return text('replace', args[2]).split(text('replace', args[0])).join(text('replace', args[1]));
  },
  printf: (args) => {
    if (typeof args[0] !== 'string') throw new TemplateError('"printf" takes a format string');
    return printf(args[0], args.slice(1));
  },
  eq: (args) => {
    if (args.length < 2) throw new TemplateError('"eq" takes at least two arguments');
    return args.slice(1).some((arg) => arg === args[0]);
  },
  ne: (args) => {
    arity('ne', args, 2);
    return args[0] !== args[1];
  },
};

function evaluate(pipeline: Pipeline, fields: TemplateFields): Value {
  let piped: Value | undefined;
  for (const [first, ...rest] of pipeline) {
    const args = rest.map((operand) => operandValue(operand, fields));
    if (piped !== undefined) args.push(piped);
    if (first.kind === 'function') {
      const fn = FUNCTIONS[first.name];
      if (!fn) throw new TemplateError(`unknown function "${first.name}"`);
      piped = fn(args);
    } else {
      if (args.length > 0) throw new TemplateError('only a function can take arguments or a piped value');
      piped = operandValue(first, fields);
    }
  }
  return piped!;
}

function operandValue(operand: Operand, fields: TemplateFields): Value {
  switch (operand.kind) {
    case 'literal':
      return operand.value;
    case 'field':
      if (!Object.hasOwn(fields, operand.name)) throw new TemplateError(`unknown value ".${operand.name}"`);
      return fields[operand.name];
    case 'function':
      return evaluate([[operand]], fields);
    case 'pipeline':
      return evaluate(operand.pipeline, fields);
  }
}

function render(nodes: Node[], fields: TemplateFields): string {
  return nodes
    .map((node) => {
      switch (node.kind) {
        case 'text':
          return node.text;
        case 'action':
          return String(evaluate(node.pipeline, fields));
        case 'if': {
          const condition = evaluate(node.condition, fields);
          return render(condition !== false && condition !== 0 && condition !== '' ? node.then : node.otherwise, fields);
        }
      }
    })
    .join('');
}

/** Parsed templates: a mount renders the same one on every request. Bounded, as templates come from configuration. */
const parsed = new Map<string, Node[]>();
const PARSED_LIMIT = 64;

/** Renders a template with the given fields; throws TemplateError on a syntax error, an unknown name or bad arguments. */
export function renderUsername(template: string, fields: TemplateFields): string {
  let nodes = parsed.get(template);
  if (!nodes) {
    nodes = parse(template);
    if (parsed.size >= PARSED_LIMIT) parsed.clear();
    parsed.set(template, nodes);
  }
  return render(nodes, fields);
}
