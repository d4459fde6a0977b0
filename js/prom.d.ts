// Types for js/prom.js. The histogram type is generated from the Rust one
// (src/core/prom.rs) into edge_deadline.d.ts.
import type { Histogram } from "./edge_deadline.js";

export type { Histogram, Unit } from "./edge_deadline.js";
/** One histogram series from `parsePrometheus` (plain data, nothing to free). */
export type PrometheusHistogram = Histogram;

