// Types for js/prom.js. The histogram type is generated from the Rust one
// (src/core/prom.rs) into edge_deadline_derive.d.ts.
import type { Histogram } from "./edge_deadline_derive.js";

export type { Histogram, Unit } from "./edge_deadline_derive.js";
/** One histogram series from `parsePrometheus` (plain data, nothing to free). */
export type PrometheusHistogram = Histogram;

/**
 * Histogram series from Prometheus: the text exposition format, or an
 * `/api/v1/query` response (instant vector of `NAME_bucket` series), as text or parsed JSON.
 * Text is parsed as a stream in linear time; Wasm memory grows to about 5.5
 * times the text at the peak and is kept for later calls.
 * @throws {RangeError} with `.param` (`input`, `input.data.result[2].value`, `options.metric`) and `.code`, naming the line (or result) and field; non-cumulative buckets; no `+Inf` bucket;
 *   exposition text over 16 MiB (before any work)
 */
export function parsePrometheus(input: string | object, options?: { metric?: string }): Histogram[];
