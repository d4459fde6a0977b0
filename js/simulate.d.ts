// Types for js/simulate.js, generated from the Rust types
// (src/core/simulate.rs) into edge_deadline_derive.d.ts.
import type { PolicySpec, ScenarioSpec, Simulation } from "./edge_deadline_derive.js";

export type { PolicyResult, Simulation } from "./edge_deadline_derive.js";
/** A lognormal body plus a uniform slow tail, and how many calls to draw. */
export type Scenario = ScenarioSpec;
/** A per-attempt timeout and how many times a timed-out call is retried. */
export type Policy = PolicySpec;

/**
 * Every policy on the same simulated calls (deterministic per seed).
 * @throws {TypeError} | {RangeError} with `.param` naming the field (`scenario.body.sigma`, `policies[0].retries`)
 */
export function simulate(scenario: Scenario, policies?: readonly Policy[]): Simulation;
