import type { ScenarioResult } from '../run';

/** One benchmark: it starts what it measures and its floor, measures both, and stops them. */
export interface Scenario {
  name: string;
  run(): Promise<ScenarioResult>;
}
