/**
 * Username templates, the subset of Vault's Go-template language its database plugins use:
 * `{{.DisplayName}}`, `{{.RoleName}}`, `{{random N}}`, `{{unix_time}}`, `{{unix_time_millis}}`,
 * `{{uuid}}`, each optionally piped through `truncate N`, `uppercase`, `lowercase` or
 * `replace "old" "new"`, e.g. `v-{{.RoleName | truncate 8}}-{{random 20}}`.
 */
import { randomInt, randomUUID } from 'node:crypto';

export interface UsernameContext {
  DisplayName: string;
  RoleName: string;
}

export class TemplateError extends Error {}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN = /"((?:[^"\\]|\\.)*)"|([^\s"]+)/g;

function tokens(command: string): string[] {
  return [...command.matchAll(TOKEN)].map((match) => (match[1] !== undefined ? JSON.parse(`"${match[1]}"`) as string : match[2]));
}

function count(name: string, args: string[]): number {
  const value = Number(args[0]);
  if (args.length !== 1 || !Number.isInteger(value) || value < 0) throw new TemplateError(`"${name}" takes one non-negative integer`);
  return value;
}

function source(command: string[], context: UsernameContext): string {
  const [name, ...args] = command;
  switch (name) {
    case '.DisplayName':
    case '.RoleName':
      return context[name.slice(1) as keyof UsernameContext];
    case 'random':
      return Array.from({ length: count(name, args) }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('');
    case 'unix_time':
      return String(Math.floor(Date.now() / 1000));
    case 'unix_time_millis':
      return String(Date.now());
    case 'uuid':
      return randomUUID();
    default:
      throw new TemplateError(`unknown value "${name ?? ''}"`);
  }
}

function apply(command: string[], value: string): string {
  const [name, ...args] = command;
  switch (name) {
    case 'truncate':
      return value.slice(0, count(name, args));
    case 'uppercase':
      return value.toUpperCase();
    case 'lowercase':
      return value.toLowerCase();
    case 'replace':
      if (args.length !== 2) throw new TemplateError('"replace" takes two strings');
      return value.split(args[0]).join(args[1]);
    default:
      throw new TemplateError(`unknown function "${name ?? ''}"`);
  }
}

/** Renders a template; throws TemplateError on an unknown name or bad arguments. */
export function renderUsername(template: string, context: UsernameContext): string {
  if (/\{\{(?![^}]*\}\})/.test(template)) throw new TemplateError('unclosed "{{"');
  return template.replace(/\{\{([^}]*)\}\}/g, (_match, body: string) => {
    const [first, ...pipes] = body.split('|').map((part) => tokens(part));
    return pipes.reduce((value, command) => apply(command, value), source(first, context));
  });
}
