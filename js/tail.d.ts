// Types for js/tail.js. `TailShape` is generated from the Rust type
// (src/core/tail.rs) into edge_deadline_derive.d.ts.
import type { TailShape } from "./edge_deadline_derive.js";
import type { LatencySketch } from "./sketch.js";

export type { TailShape } from "./edge_deadline_derive.js";

/** Share of samples above `timeoutMs`; `undefined` without samples. */
export function falseTimeoutRate(samples: Float64Array | readonly number[] | LatencySketch, timeoutMs: number): number | undefined;

/** A gap between a fast body and a slow tail, or `null` (also below 200 samples). */
export function tailShape(samples: Float64Array | readonly number[] | LatencySketch): TailShape | null;
