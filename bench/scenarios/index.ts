import type { Scenario } from './scenario';
import { sysMounts } from './sys-mounts';

/** Every scenario, in the order `npm run bench` runs them (BENCH_ONLY picks some by name). */
export const SCENARIOS: Scenario[] = [sysMounts];
