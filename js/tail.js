// Tail shape and false-timeout rates (src/core/tail.rs, bound in
// src/wasm/tail.rs): is there a gap between a fast body and a slow tail, and
// how many healthy calls would a timeout have failed? Samples go through a
// sketch or cross in chunks of a Float64Array; the shape comes back as a
// plain object (type `TailShape`, generated from the Rust type).

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { CHUNK, LatencySketch, SKETCH_TOKEN, addAllTo, float64 } from "./sketch.js";
import { number } from "./validate.js";

/**
 * Share of `samples` above `timeoutMs`: the healthy calls that timeout would
 * have failed. Exact for arrays; for a sketch, within a fraction of a bucket.
 * `undefined` when there are no samples.
 * @param {Float64Array | number[] | LatencySketch} samples
 */
export function falseTimeoutRate(samples, timeoutMs) {
  if (!isReady()) notReady("falseTimeoutRate");
  number("timeoutMs", timeoutMs, "a number of milliseconds");
  if (samples instanceof LatencySketch) return samples.fractionAbove(timeoutMs);
  const xs = float64("samples", samples);
  if (xs.length === 0) {
    core.countAbove(xs, timeoutMs, 0); // checks timeoutMs
    return undefined;
  }
  let above = 0;
  for (let at = 0; at < xs.length; at += CHUNK) above += core.countAbove(xs.subarray(at, at + CHUNK), timeoutMs, at);
  return above / xs.length;
}

/**
 * Is there a gap between a fast body and a slow tail? `null` when not (or
 * with fewer than 200 samples), else `{ bodyEdgeMs, tailStartMs, gapRatio,
 * tailShare, tailCount, stragglers, recommendedMs }`; `recommendedMs` is a
 * timeout just above the body.
 * @param {Float64Array | number[] | LatencySketch} samples
 */
export function tailShape(samples) {
  if (!isReady()) notReady("tailShape");
  if (samples instanceof LatencySketch) return core.tailShape(LatencySketch.core(samples, SKETCH_TOKEN)) ?? null;
  const sketch = new core.LatencySketchCore();
  try {
    addAllTo(sketch, float64("samples", samples));
    return core.tailShape(sketch) ?? null;
  } finally {
    sketch.free();
  }
}
