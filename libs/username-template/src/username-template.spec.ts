import { renderUsername, TemplateError } from './username-template';

/** The cloud-credential engine's default, which exercises conditionals, printf and nested pipelines. */
const CLOUD_DEFAULT =
  '{{ if (eq .Type "STS") }}{{ printf "svc-%s-%s" (unix_time) (random 20) | truncate 32 }}' +
  '{{ else }}{{ printf "svc-%s-%s-%s" (printf "%s-%s" (.DisplayName) (.PolicyName) | truncate 42) (unix_time) (random 20) | truncate 64 }}{{ end }}';

describe('username templates', () => {
  const context = { DisplayName: 'token-long-name', RoleName: 'My Role' };

  it('renders values through pipes', () => {
    expect(renderUsername('{{.DisplayName | truncate 5}}_{{.RoleName | lowercase | replace " " "-"}}', context)).toBe('token_my-role');
    expect(renderUsername('x-{{random 12 | uppercase}}', context)).toMatch(/^x-[A-Z0-9]{12}$/);
    expect(renderUsername('{{unix_time}}', context)).toMatch(/^\d{10}$/);
    expect(renderUsername('{{unix_time_millis}}', context)).toMatch(/^\d{13}$/);
    expect(renderUsername('{{uuid}}', context)).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('renders conditionals, printf and parenthesized pipelines', () => {
    expect(renderUsername(CLOUD_DEFAULT, { Type: 'STS', DisplayName: 'd', PolicyName: 'p' })).toMatch(/^svc-\d{10}-[A-Za-z0-9]{17}$/);
    const long = 'x'.repeat(50);
    const iam = renderUsername(CLOUD_DEFAULT, { Type: 'IAM', DisplayName: long, PolicyName: 'role' });
    expect(iam).toHaveLength(64);
    expect(iam).toMatch(new RegExp(`^svc-${'x'.repeat(42)}-\\d{10}-[A-Za-z0-9]{6}$`));
    expect(renderUsername(CLOUD_DEFAULT, { Type: 'IAM', DisplayName: 'token', PolicyName: 'app' })).toMatch(/^svc-token-app-\d{10}-[A-Za-z0-9]{20}$/);
    expect(renderUsername('{{if eq .Type "a" "b"}}A{{else if eq .Type "c"}}C{{else}}D{{end}}', { Type: 'b' })).toBe('A');
    expect(renderUsername('{{if eq .Type "a"}}A{{else if eq .Type "c"}}C{{else}}D{{end}}', { Type: 'c' })).toBe('C');
    expect(renderUsername('{{if ne .Type "a"}}N{{end}}-{{- " trimmed" }}', { Type: 'a' })).toBe('- trimmed');
    expect(renderUsername('{{printf "%d%%-%v" 5 .Type}}', { Type: 't' })).toBe('5%-t');
  });

  it.each([
    ['{{.Nope}}', 'unknown value ".Nope"'],
    ['{{.RoleName | shout}}', 'unknown function "shout"'],
    ['{{random "x"}}', '"random" takes one non-negative integer'],
    ['{{truncate 3}}', '"truncate" takes 2 arguments, not 1'],
    ['{{.RoleName', 'unclosed "{{"'],
    ['{{if .RoleName}}x', '"{{if}}" without "{{end}}"'],
    ['{{end}}', 'unexpected "{{end}}"'],
    ['{{(random 3}}', 'unclosed "("'],
    ['{{.RoleName 3}}', 'only a function can take arguments'],
  ])('refuses %s', (template, message) => {
    expect(() => renderUsername(template, context)).toThrow(TemplateError);
    expect(() => renderUsername(template, context)).toThrow(message);
  });
});
