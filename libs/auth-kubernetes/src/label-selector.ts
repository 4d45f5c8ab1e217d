/**
 * Kubernetes label selectors (`matchLabels` and `matchExpressions`), written as JSON or YAML, as a
 * role's bound_service_account_namespace_selector holds them, and matched against a namespace's labels.
 */
import { parse } from 'yaml';

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
type Operator = (typeof OPERATORS)[number];

interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export interface LabelSelector {
  matchLabels: Record<string, string>;
  matchExpressions: Requirement[];
}

/** Why a selector text is not a label selector. */
export class LabelSelectorError extends Error {}

const isMapping = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The selector a text (JSON or YAML) describes; throws LabelSelectorError naming what is wrong. */
export function parseLabelSelector(text: string): LabelSelector {
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (err) {
    throw new LabelSelectorError(`not JSON or YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isMapping(parsed)) throw new LabelSelectorError('must be an object with matchLabels and/or matchExpressions');
  const unknown = Object.keys(parsed).filter((key) => key !== 'matchLabels' && key !== 'matchExpressions');
  if (unknown.length > 0) throw new LabelSelectorError(`unknown member(s) ${unknown.join(', ')}; a label selector has matchLabels and matchExpressions`);
  const { matchLabels = {}, matchExpressions = [] } = parsed;
  if (!isMapping(matchLabels) || Object.values(matchLabels).some((value) => typeof value !== 'string')) {
    throw new LabelSelectorError('matchLabels must map label names to strings (quote values such as "1" or "true")');
  }
  if (!Array.isArray(matchExpressions)) throw new LabelSelectorError('matchExpressions must be a list');
  return { matchLabels: matchLabels as Record<string, string>, matchExpressions: matchExpressions.map(requirement) };
}

function requirement(entry: unknown, index: number): Requirement {
  const where = `matchExpressions[${index}]`;
  if (!isMapping(entry) || typeof entry.key !== 'string' || entry.key === '') throw new LabelSelectorError(`${where} needs a key`);
  const operator = entry.operator as Operator;
  if (!OPERATORS.includes(operator)) throw new LabelSelectorError(`${where}: operator must be one of ${OPERATORS.join(', ')}`);
  const values = entry.values ?? [];
  if (!Array.isArray(values) || values.some((value) => typeof value !== 'string')) throw new LabelSelectorError(`${where}: values must be a list of strings`);
  const needsValues = operator === 'In' || operator === 'NotIn';
  if (needsValues !== values.length > 0) throw new LabelSelectorError(`${where}: operator ${operator} ${needsValues ? 'needs' : 'takes no'} values`);
  return { key: entry.key, operator, values: values as string[] };
}

/** Whether labels satisfy every part of the selector (an empty selector selects everything, as in Kubernetes). */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  return (
    Object.entries(selector.matchLabels).every(([key, value]) => has(key) && labels[key] === value) &&
    selector.matchExpressions.every(({ key, operator, values }) => {
      switch (operator) {
        case 'In':
          return has(key) && values.includes(labels[key]);
        case 'NotIn':
          return !has(key) || !values.includes(labels[key]);
        case 'Exists':
          return has(key);
        case 'DoesNotExist':
          return !has(key);
      }
    })
  );
}
