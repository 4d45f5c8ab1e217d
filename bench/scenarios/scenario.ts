import type { ScenarioResult } from '../run';

/** One benchmark: it starts what it measures and its floor, measures both, and stops them. */
export interface Scenario {
  name: string;
  /** Skipped, with a line saying so, when PostgreSQL does not answer. */
  needsPostgres?: boolean;
  /** One result, or several rows (the scale scenario: one per worker count). */
  run(): Promise<ScenarioResult | ScenarioResult[]>;
}
