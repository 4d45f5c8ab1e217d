import { renderUsername, TemplateError } from '@svc/username-template';
import type { DestinationType, Granularity } from './model';

/**
 * Provider secret names. A destination's `secret_name_template` (the Go-template subset of
 * username templates) is rendered with the fields below, then fitted to the provider's rules:
 * characters the provider refuses become its separator, and a name that still breaks a rule
 * (length, first character, reserved prefix) is refused with the rule it breaks.
 */
export interface NameFields {
  DestinationType: string;
  DestinationName: string;
  NamespacePath: string;
  NamespaceBaseName: string;
  MountPath: string;
  MountBaseName: string;
  MountAccessor: string;
  SecretPath: string;
  SecretBaseName: string;
  SecretKey: string;
}

interface NamingRule {
  /** Characters outside this class are replaced by `separator`. */
  disallowed: RegExp;
  separator: string;
  maxLength: number;
  upperCase?: boolean;
  /** A problem with the fitted name, if any. */
  check?: (name: string) => string | undefined;
  defaultTemplate: string;
}

const startsWithLetterOrUnderscore = (name: string) => (/^[0-9]/.test(name) ? 'must not start with a digit' : undefined);

export const NAMING_RULES: Record<DestinationType, NamingRule> = {
  'cloud-sm': {
    disallowed: /[^A-Za-z0-9/_+=.@-]/g,
    separator: '_',
    maxLength: 512,
    defaultTemplate: 'svc/{{ .MountAccessor }}/{{ .SecretPath }}{{ if .SecretKey }}/{{ .SecretKey }}{{ end }}',
  },
  'cloudb-kv': {
    disallowed: /[^A-Za-z0-9-]/g,
    separator: '-',
    maxLength: 127,
    defaultTemplate: 'svc-{{ .MountAccessor }}-{{ .SecretPath }}{{ if .SecretKey }}-{{ .SecretKey }}{{ end }}',
  },
  'cloudc-sm': {
    disallowed: /[^A-Za-z0-9_-]/g,
    separator: '_',
    maxLength: 255,
    defaultTemplate: 'svc_{{ .MountAccessor }}_{{ .SecretPath }}{{ if .SecretKey }}_{{ .SecretKey }}{{ end }}',
  },
  codehost: {
    disallowed: /[^A-Z0-9_]/g,
    separator: '_',
    maxLength: 255,
    upperCase: true,
    check: (name) => startsWithLetterOrUnderscore(name) ?? (name.startsWith('GITHUB_') ? 'must not start with GITHUB_' : undefined),
    defaultTemplate: 'SVC_{{ .MountAccessor }}_{{ .SecretPath }}{{ if .SecretKey }}_{{ .SecretKey }}{{ end }}',
  },
  'webhost-project': {
    disallowed: /[^A-Za-z0-9_]/g,
    separator: '_',
    maxLength: 256,
    upperCase: true,
    check: startsWithLetterOrUnderscore,
    defaultTemplate: 'SVC_{{ .MountAccessor }}_{{ .SecretPath }}{{ if .SecretKey }}_{{ .SecretKey }}{{ end }}',
  },
};

/** Granularity a destination type gets when none is given: per key where secrets are environment variables. */
export function defaultGranularity(type: DestinationType): Granularity {
  return type === 'codehost' || type === 'webhost-project' ? 'secret-key' : 'secret-path';
}

export class SecretNameError extends Error {}

/** The provider name of a secret (or of one key of it); SecretNameError says what is wrong. */
export function providerSecretName(type: DestinationType, template: string, fields: NameFields): string {
  const rule = NAMING_RULES[type];
  let rendered: string;
  try {
    rendered = renderUsername(template || rule.defaultTemplate, { ...fields });
  } catch (err) {
    if (err instanceof TemplateError) throw new SecretNameError(`invalid secret_name_template: ${err.message}`);
    throw err;
  }
  const cased = rule.upperCase ? rendered.toUpperCase() : rendered;
  const name = cased.replace(rule.disallowed, rule.separator);
  if (name === '') throw new SecretNameError(`the secret name template of a ${type} destination produced an empty name`);
  if (name.length > rule.maxLength) throw new SecretNameError(`secret name "${name}" is longer than the ${rule.maxLength} characters a ${type} destination allows`);
  const problem = rule.check?.(name);
  if (problem) throw new SecretNameError(`secret name "${name}" ${problem}`);
  return name;
}

/** The template fields of a secret; `key` is the sub-key with secret-key granularity. */
export function nameFields(destination: { type: string; name: string }, secret: { namespace: string; mount: string; accessor: string; secretName: string }, key = ''): NameFields {
  const trimmed = (path: string) => path.replace(/\/+$/, '');
  const base = (path: string) => trimmed(path).split('/').pop() ?? '';
  return {
    DestinationType: destination.type,
    DestinationName: destination.name,
    NamespacePath: secret.namespace,
    NamespaceBaseName: base(secret.namespace),
    MountPath: secret.mount,
    MountBaseName: base(secret.mount),
    MountAccessor: secret.accessor,
    SecretPath: secret.secretName,
    SecretBaseName: base(secret.secretName),
    SecretKey: key,
  };
}
