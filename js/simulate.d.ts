// Types for js/simulate.js, generated from the Rust types
// (src/core/simulate.rs) into edge_deadline_derive.d.ts.
import type { ScenarioSpec, Simulation } from "./edge_deadline_derive.js";

export type { PolicyResult, Simulation } from "./edge_deadline_derive.js";
/** A lognormal body plus a uniform slow tail, and how many calls to draw. */
export type Scenario = ScenarioSpec;
/** A per-attempt timeout and how many times a timed-out call is retried. */
export interface Policy {
  /**
   * How long an attempt may run: milliseconds, or a percentile of the scenario
   * (`"p50"`, `"p90"`, `"p99"`, `"p99.9"`), optionally multiplied (`"2xp99"`), as the CLI's `--policy`.
   */
  timeoutMs: number | string;
  /** How many times a timed-out call is tried again (0 … 10, default 0). */
  retries?: number;
}

/**
 * Every policy on the same simulated calls (deterministic per seed).
 * @throws {TypeError} | {RangeError} with `.param` naming the field (`scenario.body.sigma`, `policies[0].retries`)
 */
export function simulate(scenario: Scenario, policies?: readonly Policy[]): Simulation;
