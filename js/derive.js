// deriveTimeouts: `timeout = quantile(successes, q) × safety`, per bucket,
// with the censoring, drift and resolution checks of src/core/derive.rs.
// Every number is computed by the Wasm core (bound in src/wasm/derive.rs);
// this file checks JS types, walks the caller's rows into the core's columns,
// and reads the clock for `derivedAt`. Options and results cross as
// objects whose types are generated from the Rust ones; the defaults (q 0.99,
// safety 2, relativeError 0.01) are the core's (`deriveDefaults`).
//
// # Invariants
// 1. Nothing this file creates in Wasm memory outlives the call: temporary
//    sketches and derivers are freed in a `finally`.
// 2. Bad input is a TypeError (wrong type) or RangeError (wrong value) with
//    `.param` naming it as the caller wrote it (`data[3].ms`, `options.q`)
//    and a stable `.code`.
// 3. "No data" is `null` in a derived row (a record, kept in JSON).

import * as core from "./edge_deadline_derive.js";
import { argumentError, CODES } from "./errors.js";
import { isReady, notReady } from "./derive-load.js";
import { CHUNK, LatencySketch, SKETCH_TOKEN, addAllTo, float64 } from "./sketch.js";
import { describe, number, obj, optNumber, str, typeError } from "./validate.js";

/** The core's defaults, read once (after init). */
let defaults;

/** Validated options: `core` for the Wasm core, plus the row fields `by` and `outcome`. */
function deriveOptions(options) {
  const o = obj("options", options, "an object like { q, safety, by, outcome, configuredMs }", true);
  defaults ??= core.deriveDefaults();
  const opt = (name, what) => (o[name] === undefined ? defaults[name] : number(`options.${name}`, o[name], what));
  const coreOptions = {
    q: opt("q", "a number greater than 0 and less than 1"),
    safety: opt("safety", "a number between 1 and 100"),
    relativeError: opt("relativeError", "a number between 0.001 and 0.5"),
    configuredMs: optNumber("options.configuredMs", o.configuredMs, "a number of milliseconds"),
  };
  const outcome = o.outcome === undefined ? "outcome" : str("options.outcome", o.outcome);
  const by = o.by ?? [];
  if (!Array.isArray(by)) throw typeError("options.by", "an array of label names", by);
  by.forEach((b, i) => str(`options.by[${i}]`, b, "a label name (a string)"));
  if (new Set(by).size !== by.length) {
    throw argumentError("range", CODES.DUPLICATE_LABEL, "options.by", `'options.by' must not name a label twice: current value is ${JSON.stringify(by)}`);
  }
  return { core: coreOptions, outcome, by };
}

// ---- rows ---------------------------------------------------------------------

function labelValue(row, i, name) {
  const v = row[name];
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  throw typeError(`data[${i}].${name}`, "a string or a number (a label)", v);
}

/**
 * Rows cross as columns (src/wasm/derive.rs, "Rows stay columns"): a bucket
 * id per label tuple, an outcome id per outcome word (both issued by the
 * core, cached here, never interpreted), and a duration.
 */
function deriveFromRows(rows, o) {
  const deriver = new core.DeriverCore(o.core, o.by, o.outcome);
  try {
    const buckets = new Map(); // first label's value → … → last label's value → id
    const outcomes = new Map(); // outcome word → id
    const success = deriver.outcome(undefined, 0); // a row without an outcome is a success
    const ids = new Uint32Array(Math.min(rows.length, CHUNK));
    const outs = new Uint32Array(ids.length);
    const ms = new Float64Array(ids.length);
    let filled = 0;
    let base = 0;
    const flush = () => {
      deriver.addRows(ids.subarray(0, filled), outs.subarray(0, filled), ms.subarray(0, filled), base);
      base += filled;
      filled = 0;
    };
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (row === null || typeof row !== "object") throw typeError(`data[${i}]`, "an object like { ms, outcome }", row);
      const out = row[o.outcome];
      let outcome = success;
      if (out !== undefined && out !== null) {
        // A number is an HTTP status: its text is what the core reads ("404").
        if (typeof out !== "string" && typeof out !== "boolean" && typeof out !== "number") {
          throw typeError(`data[${i}].${o.outcome}`, "a string, a number (an HTTP status) or a boolean", out);
        }
        const text = String(out);
        outcome = outcomes.get(text);
        if (outcome === undefined) outcomes.set(text, (outcome = deriver.outcome(text, i)));
      }
      const d = row.ms;
      if (d === undefined || d === null) {
        if (outcome === success) throw typeError(`data[${i}].ms`, "a number of milliseconds for a successful call", d);
        ms[filled] = 0; // a timeout or error without a duration: its duration is only checked
      } else {
        ms[filled] = typeof d === "number" ? d : number(`data[${i}].ms`, d, "a number of milliseconds");
      }
      // The bucket's id, through one Map per label (no key string is built:
      // the values' hashes are cached on the strings).
      let node = buckets;
      const last = o.by.length - 1;
      for (let b = 0; b < last; b++) {
        const v = labelValue(row, i, o.by[b]);
        let next = node.get(v);
        if (next === undefined) node.set(v, (next = new Map()));
        node = next;
      }
      const leaf = last < 0 ? "" : labelValue(row, i, o.by[last]);
      let id = node.get(leaf);
      if (id === undefined) node.set(leaf, (id = deriver.addBucket(o.by.map((b) => labelValue(row, i, b)))));
      ids[filled] = id;
      outs[filled] = outcome;
      if (++filled === ids.length) flush();
    }
    if (filled) flush();
    return deriver.results();
  } finally {
    deriver.free();
  }
}

function deriveFromSamples(samples, o) {
  const sketch = new core.LatencySketchCore(o.core.relativeError);
  try {
    addAllTo(sketch, samples, "data");
    return core.deriveSketch(sketch, o.core);
  } finally {
    sketch.free();
  }
}

// ---- histograms -----------------------------------------------------------------

function isHistogram(x) {
  return x !== null && typeof x === "object" && Array.isArray(x.boundsMs);
}

function deriveFromHistograms(hists, o) {
  hists.forEach((h, i) => {
    if (!isHistogram(h)) throw typeError(`data[${i}]`, "a histogram from parsePrometheus (with boundsMs and cumulative)", h);
    if (!Array.isArray(h.cumulative) || h.cumulative.length !== h.boundsMs.length) {
      throw argumentError("type", CODES.INVALID_TYPE, `data[${i}].cumulative`, `'data[${i}].cumulative' must be an array as long as 'boundsMs': current value is ${describe(h.cumulative)}`);
    }
  });
  return core.deriveHistograms(hists, o.by, o.outcome, o.core);
}

/**
 * One row per bucket: `{ bucket, n, p50, p90, p99, p999, timeoutMs, q,
 * safety, derivedAt, warnings, … }` with `timeoutMs = quantile(q) × safety`
 * over successful calls only.
 * @param {LatencySketch | Float64Array | number[] | object[]} data a sketch
 *   or durations of successful calls; rows `{ ms, outcome?, …labels }`; or
 *   histograms from `parsePrometheus`
 * @param {{ q?: number, safety?: number, by?: string[], outcome?: string,
 *   configuredMs?: number, relativeError?: number }} [options]
 */
export function deriveTimeouts(data, options) {
  if (!isReady()) notReady("deriveTimeouts");
  const o = deriveOptions(options);
  const derivedAt = new Date().toISOString();
  let rows;
  if (data instanceof LatencySketch) {
    rows = core.deriveSketch(LatencySketch.core(data, SKETCH_TOKEN), o.core);
  } else if (data instanceof Float64Array) {
    rows = deriveFromSamples(data, o);
  } else if (Array.isArray(data)) {
    const first = data[0];
    if (data.length === 0) rows = deriveFromSamples(new Float64Array(0), o);
    else if (typeof first === "number") rows = deriveFromSamples(float64("data", data), o);
    else if (isHistogram(first)) rows = deriveFromHistograms(data, o);
    else rows = deriveFromRows(data, o);
  } else {
    throw typeError(
      "data",
      "a LatencySketch, a Float64Array of durations, an array of rows { ms, outcome, …labels } or histograms from parsePrometheus",
      data,
    );
  }
  for (const row of rows) row.derivedAt = derivedAt;
  return rows;
}
