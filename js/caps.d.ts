// Types for js/caps.js. All durations are milliseconds. The built-in
// figures, a platform request and which cap bound the deadline are generated
// from the Rust core (src/core/caps.rs) into edge_deadline.d.ts.
import type { Bound, Cap, CapKind, Platform, PlatformRequest, Tier, Trigger } from "./edge_deadline.js";
import type { Deadline } from "./index.js";

export type { Bound, CapKind, Platform, Tier, Trigger };

/** One documented limit, with its source and the date it was read (`null`: every plan/trigger, or no such limit). */
export type PlatformCap = Cap;

/** The built-in caps, each with its source and date. */
export function platformCaps(): PlatformCap[];

/**
 * The core's request (`platform`, "custom" for caps of your own; `plan`; `trigger`, default "fetch";
 * `productMs`, the product's own limit; `fallbackReserveMs`, kept for a truthful terminal response; `caps`,
 * overrides of the built-in figures such as `limits.cpu_ms` from wrangler.toml) and a parent signal.
 */
export interface ForPlatformOptions extends PlatformRequest {
  signal?: AbortSignal;
}

/**
 * `now + min(productMs, the platform's wall-clock caps) − fallbackReserveMs`, with what bound it. A reserve at
 * or above the smallest cap gives an expired deadline (never earlier than now), not an error.
 */
export function platformDeadline(options: ForPlatformOptions): {
  deadline: Deadline;
  bound: Bound;
  /** The CPU budget: reported, never folded into the deadline. */
  cpuMs: number | null;
  /** How long the runtime's own fetch waits without a byte (Node's undici, Bun): reported, never folded in. */
  fetchIdleMs: number | null;
  sources: string[];
};

/** What `Deadline.forLambda` reads of a Lambda handler's context. */
export interface LambdaContext {
  /** The milliseconds this invocation has left. */
  getRemainingTimeInMillis(): number;
}

export interface ForLambdaOptions {
  /** The product's own limit, ms; the invocation's remaining time alone bounds it when absent. */
  productMs?: number;
  /** Kept back for the fallback's answer, ms. */
  fallbackReserveMs: number;
  signal?: AbortSignal;
}
