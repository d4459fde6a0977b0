// Types for js/little.js. The options types are generated from the Rust
// ones (src/core/little.rs) into edge_deadline_derive.d.ts.
import type { ConcurrencyBoundOptions, MaxTimeoutOptions } from "./edge_deadline_derive.js";

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000` (Little's law). */
export function concurrencyBound(options: ConcurrencyBoundOptions): number;

/** The longest timeout (ms) keeping `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options: MaxTimeoutOptions): number;
