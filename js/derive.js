// Timeouts derived from data: `timeout = quantile(successes, q) × safety`, per
// bucket, with the censoring, drift and resolution checks of
// src/core/derive.rs; tail shape, policy simulation and Little's law. Every
// number is computed by the Wasm core; this file converts JS data (rows,
// typed arrays, sketches, Prometheus text or query JSON) into the core's
// inputs and its flat answers (src/wasm/derive.rs, "Answers as flat arrays")
// back into objects, and reads the clock for `derivedAt`.
//
// # Invariants
// 1. Nothing this file creates in Wasm memory outlives the call: temporary
//    sketches and derivers are freed in a `finally`.
// 2. Bad input is a TypeError (wrong type) or RangeError (wrong value) whose
//    message names the parameter, and for data the row, sample or line.
// 3. "No data" is `null` in a derived row (a record, kept in JSON) and
//    `undefined` from a function that answers one number.

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { CHUNK, LatencySketch, SKETCH_TOKEN, addAllTo, float64 } from "./sketch.js";
import { describe, number } from "./validate.js";

export { LatencySketch } from "./sketch.js";
export { ConcurrencyLimiter, Overloaded, isOverloaded } from "./limiter.js";

// Outcome codes of DeriverCore.addRows (src/wasm/derive.rs).
const SUCCESS = 0;
const NO_DURATION = 4;

function ready(what) {
  if (!isReady()) notReady(what);
}

function optionsObject(options, where, like) {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`'options' of ${where} must be an object like ${like}: current value is ${describe(options)}`);
  }
  return options;
}

function str(param, value, where = "") {
  if (typeof value !== "string") throw new TypeError(`${where && `${where}: `}'${param}' must be a string: current value is ${describe(value)}`);
  return value;
}

/** Validated derivation options with defaults. */
function deriveOptions(options) {
  const o = optionsObject(options, "deriveTimeouts", "{ q, safety, by, outcome, configuredMs }");
  const q = number("q", o.q ?? 0.99, "a number greater than 0 and less than 1");
  const safety = number("safety", o.safety ?? 2, "a number between 1 and 100");
  const relativeError = number("relativeError", o.relativeError ?? 0.01, "a number between 0.001 and 0.5");
  const configuredMs = o.configuredMs === undefined ? undefined : number("configuredMs", o.configuredMs, "a number of milliseconds");
  const outcome = str("outcome", o.outcome ?? "outcome");
  const by = o.by ?? [];
  if (!Array.isArray(by)) throw new TypeError(`'by' must be an array of label names: current value is ${describe(by)}`);
  by.forEach((b, i) => {
    if (typeof b !== "string") throw new TypeError(`'by' must hold label names (strings): element ${i} is ${describe(b)}`);
  });
  if (new Set(by).size !== by.length) throw new RangeError(`'by' must not name a label twice: current value is ${JSON.stringify(by)}`);
  return { q, safety, relativeError, configuredMs, outcome, by };
}

/** Many strings as one, with their lengths (src/wasm/derive.rs, `split_js`). */
function strings(list) {
  const lens = new Uint32Array(list.length);
  for (let i = 0; i < list.length; i++) lens[i] = list[i].length;
  return [list.join(""), lens];
}

// ---- decoding the core's flat answers ----------------------------------------

function decodeTail(a, i) {
  return {
    bodyEdgeMs: a[i],
    tailStartMs: a[i + 1],
    gapRatio: a[i + 2],
    tailShare: a[i + 3],
    tailCount: a[i + 4],
    stragglers: a[i + 5],
    recommendedMs: a[i + 6],
  };
}

/** Rows of src/wasm/derive.rs `encode_rows`, each stamped with `derivedAt`. */
function decodeRows(a, derivedAt) {
  const rows = [];
  let i = 0;
  const count = a[i++];
  for (let r = 0; r < count; r++) {
    const bucket = {};
    for (let k = a[i++]; k > 0; k--, i += 2) bucket[a[i]] = a[i + 1];
    const row = {
      bucket,
      n: a[i],
      p50: a[i + 1],
      p90: a[i + 2],
      p99: a[i + 3],
      p999: a[i + 4],
      quantileMs: a[i + 5],
      timeoutMs: a[i + 6],
      q: a[i + 7],
      safety: a[i + 8],
      derivedAt,
      excluded: { timeouts: a[i + 9], errors: a[i + 10] },
      tail: null,
      candidates: [],
      warnings: [],
    };
    i += 11;
    if (a[i++] === 1) {
      row.tail = decodeTail(a, i);
      i += 7;
    }
    for (let k = a[i++]; k > 0; k--, i += 3) row.candidates.push({ name: a[i], timeoutMs: a[i + 1], falseTimeoutRate: a[i + 2] });
    for (let k = a[i++]; k > 0; k--, i += 2) row.warnings.push({ code: a[i], message: a[i + 1] });
    rows.push(row);
  }
  return rows;
}

/** Histograms of src/wasm/derive.rs `encode_histograms`. */
function decodeHistograms(a) {
  const out = [];
  let i = 0;
  const count = a[i++];
  for (let h = 0; h < count; h++) {
    const metric = a[i++];
    const unit = a[i++];
    const labels = {};
    for (let k = a[i++]; k > 0; k--, i += 2) labels[a[i]] = a[i + 1];
    const boundsMs = [];
    const cumulative = [];
    for (let k = a[i++]; k > 0; k--, i += 2) {
      boundsMs.push(a[i]);
      cumulative.push(a[i + 1]);
    }
    out.push({ kind: "histogram", metric, unit, labels, boundsMs, cumulative, sumMs: a[i], count: a[i + 1] });
    i += 2;
  }
  return out;
}

// ---- Prometheus ---------------------------------------------------------------

/**
 * Histograms from Prometheus: the text exposition format (what `/metrics`
 * serves), or the HTTP API's instant-query response (`/api/v1/query`), as
 * text or already parsed. Bucket bounds are converted to ms (`_seconds`
 * families × 1000).
 * @param {string | object} input
 * @param {{ metric?: string }} [options] the histogram family (needed when several are present)
 */
export function parsePrometheus(input, options) {
  ready("parsePrometheus");
  const o = optionsObject(options, "parsePrometheus", "{ metric }");
  const metric = o.metric === undefined ? undefined : str("metric", o.metric);
  if (typeof input === "string" && !input.trimStart().startsWith("{")) {
    // Refused before the copy into Wasm memory, which would keep the space
    // for good. UTF-8 is never shorter than UTF-16, so longer text is too
    // long in bytes too; the core checks the exact byte length.
    const max = core.maxExpositionBytes();
    if (input.length > max) {
      throw new RangeError(
        `'input' is ${input.length} characters of exposition text: at most ${max} bytes are parsed; ` +
          "scrape or filter one histogram family (e.g. query Prometheus for it) instead",
      );
    }
    return decodeHistograms(parseExposition(input, metric));
  }
  let response = input;
  if (typeof input === "string") {
    try {
      response = JSON.parse(input);
    } catch (error) {
      throw new RangeError(`'input' looks like a Prometheus query response but is not valid JSON: ${error.message}`);
    }
  }
  if (response === null || typeof response !== "object") {
    throw new TypeError(`'input' must be exposition text or a Prometheus query response: current value is ${describe(input)}`);
  }
  return decodeHistograms(fromQueryResponse(response, metric));
}

/** Characters of exposition text per Wasm call: Wasm memory holds one piece, not the text. */
const PIECE = 1 << 20;

/** `text` in pieces of about PIECE characters, each ending after a line break (or at the end). */
function* pieces(text) {
  for (let at = 0; at < text.length; ) {
    const lf = text.indexOf("\n", at + PIECE);
    const end = lf < 0 ? text.length : lf + 1;
    yield text.slice(at, end);
    at = end;
  }
}

/** The core's histogram arrays for exposition text (two passes without a metric). */
function parseExposition(text, metric) {
  const parser = new core.PromTextCore(metric);
  try {
    if (metric === undefined) for (const piece of pieces(text)) parser.scan(piece);
    for (const piece of pieces(text)) parser.feed(piece);
    return parser.finish();
  } finally {
    parser.free();
  }
}

/** Walks an `/api/v1/query` response into the core's sample arrays. */
function fromQueryResponse(response, metric) {
  if (response.status !== "success") {
    const why = typeof response.error === "string" ? `: ${response.error}` : "";
    throw new RangeError(`'input' is a Prometheus response with status ${JSON.stringify(response.status)}, not "success"${why}`);
  }
  const data = response.data;
  if (data?.resultType !== "vector") {
    throw new RangeError(
      `'input.data.resultType' must be "vector" (an instant query such as NAME_bucket or increase(NAME_bucket[1h])): current value is ${describe(data?.resultType)}`,
    );
  }
  if (!Array.isArray(data.result)) throw new TypeError(`'input.data.result' must be an array: current value is ${describe(data.result)}`);
  const fallback = metric === undefined ? undefined : `${metric.replace(/_bucket$/, "")}_bucket`;
  const texts = []; // per result: name, value, then label pairs
  const labelCounts = [];
  data.result.forEach((r, i) => {
    const where = `'input.data.result[${i}]`;
    if (r === null || typeof r !== "object" || r.metric === null || typeof r.metric !== "object") {
      throw new TypeError(`${where}.metric' must be an object of labels: current value is ${describe(r?.metric)}`);
    }
    if (!Array.isArray(r.value) || r.value.length !== 2 || typeof r.value[1] !== "string") {
      throw new TypeError(`${where}.value' must be [timestamp, "number"]: current value is ${describe(r.value)}`);
    }
    const name = typeof r.metric.__name__ === "string" ? r.metric.__name__ : fallback;
    if (name === undefined) {
      throw new RangeError(`${where}' has no __name__ (as after increase()): pass the histogram's name as 'metric'`);
    }
    texts.push(name, r.value[1]);
    let n = 0;
    for (const [k, v] of Object.entries(r.metric)) {
      if (typeof v !== "string") throw new TypeError(`${where}.metric.${k}' must be a string: current value is ${describe(v)}`);
      if (k !== "__name__") texts.push(k, v), n++;
    }
    labelCounts.push(n);
  });
  return core.histogramsFromResults(...strings(texts), new Uint32Array(labelCounts), metric);
}

function isHistogram(x) {
  return x !== null && typeof x === "object" && Array.isArray(x.boundsMs);
}

function deriveFromHistograms(hists, o) {
  const texts = [...o.by]; // then per histogram: name, unit, label pairs
  const labelCounts = [];
  const bucketCounts = [];
  const bounds = [];
  const cumulative = [];
  hists.forEach((h, i) => {
    const where = `histogram ${i + 1}`;
    if (!isHistogram(h)) throw new TypeError(`${where} must come from parsePrometheus (with boundsMs and cumulative): current value is ${describe(h)}`);
    if (!Array.isArray(h.cumulative) || h.cumulative.length !== h.boundsMs.length) {
      throw new TypeError(`${where}: 'cumulative' must be an array as long as 'boundsMs'`);
    }
    texts.push(str("metric", h.metric, where), str("unit", h.unit, where));
    let n = 0;
    for (const [k, v] of Object.entries(h.labels ?? {})) texts.push(k, str(`labels.${k}`, v, where)), n++;
    labelCounts.push(n);
    bucketCounts.push(h.boundsMs.length);
    h.boundsMs.forEach((b, j) => bounds.push(number(`boundsMs[${j}]`, b, "a number of milliseconds", where)));
    h.cumulative.forEach((c, j) => cumulative.push(number(`cumulative[${j}]`, c, "a number", where)));
  });
  return core.deriveHistograms(
    ...strings(texts),
    o.by.length,
    new Uint32Array(labelCounts),
    new Uint32Array(bucketCounts),
    new Float64Array(bounds),
    new Float64Array(cumulative),
    o.outcome,
    o.q,
    o.safety,
    o.configuredMs,
  );
}

// ---- rows ---------------------------------------------------------------------

function labelValue(row, i, name) {
  const v = row[name];
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  throw new TypeError(`row ${i}: label '${name}' must be a string or a number: current value is ${describe(v)}`);
}

function deriveFromRows(rows, o) {
  const deriver = new core.DeriverCore(o.q, o.safety, o.relativeError, o.configuredMs, ...strings(o.by));
  try {
    const buckets = new Map(); // first label's value → … → last label's value → id
    let bucketCount = 0;
    const outcomes = new Map(); // outcome text → code
    const ids = new Uint32Array(Math.min(rows.length, CHUNK));
    const codes = new Uint8Array(ids.length);
    const ms = new Float64Array(ids.length);
    let fresh = [];
    let freshCount = 0;
    let filled = 0;
    let base = 0;
    const flush = () => {
      if (freshCount) deriver.addBuckets(freshCount, ...strings(fresh));
      fresh = [];
      freshCount = 0;
      deriver.addRows(ids.subarray(0, filled), codes.subarray(0, filled), ms.subarray(0, filled), base);
      base += filled;
      filled = 0;
    };
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (row === null || typeof row !== "object") throw new TypeError(`row ${i} must be an object like { ms, outcome }: current value is ${describe(row)}`);
      let code = SUCCESS;
      const out = row[o.outcome];
      if (out !== undefined && out !== null) {
        if (typeof out !== "string" && typeof out !== "boolean") {
          throw new TypeError(`row ${i}: '${o.outcome}' must be a string or a boolean: current value is ${describe(out)}`);
        }
        const text = String(out);
        code = outcomes.get(text);
        if (code === undefined) outcomes.set(text, (code = core.outcomeCode(text, o.outcome, i)));
      }
      const d = row.ms;
      if (d === undefined || d === null) {
        if (code === SUCCESS) throw new TypeError(`row ${i}: 'ms' must be a number of milliseconds for a successful call: current value is ${describe(d)}`);
        code |= NO_DURATION;
        ms[filled] = 0;
      } else {
        ms[filled] = typeof d === "number" ? d : number("ms", d, "a number of milliseconds", `row ${i}`);
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
      if (id === undefined) {
        node.set(leaf, (id = bucketCount++));
        for (const b of o.by) fresh.push(labelValue(row, i, b));
        freshCount++;
      }
      ids[filled] = id;
      codes[filled] = code;
      if (++filled === ids.length) flush();
    }
    if (filled || freshCount) flush();
    return deriver.results();
  } finally {
    deriver.free();
  }
}

function deriveFromSamples(samples, o) {
  const sketch = new core.LatencySketchCore(o.relativeError);
  try {
    addAllTo(sketch, samples);
    return sketch.derive(o.q, o.safety, o.configuredMs);
  } finally {
    sketch.free();
  }
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
  ready("deriveTimeouts");
  const o = deriveOptions(options);
  const derivedAt = new Date().toISOString();
  let flat;
  if (data instanceof LatencySketch) {
    flat = LatencySketch.core(data, SKETCH_TOKEN).derive(o.q, o.safety, o.configuredMs);
  } else if (data instanceof Float64Array) {
    flat = deriveFromSamples(data, o);
  } else if (Array.isArray(data)) {
    const first = data[0];
    if (data.length === 0) flat = deriveFromSamples(new Float64Array(0), o);
    else if (typeof first === "number") flat = deriveFromSamples(float64("data", data), o);
    else if (isHistogram(first)) flat = deriveFromHistograms(data, o);
    else flat = deriveFromRows(data, o);
  } else {
    throw new TypeError(
      `'data' must be a LatencySketch, a Float64Array of durations, an array of rows { ms, outcome, …labels } or histograms from parsePrometheus: current value is ${describe(data)}`,
    );
  }
  return decodeRows(flat, derivedAt);
}

// ---- tail shape and false timeouts ----------------------------------------------

/**
 * Share of `samples` above `timeoutMs`: the healthy calls that timeout would
 * have failed. Exact for arrays; for a sketch, within a fraction of a bucket.
 * `undefined` when there are no samples.
 * @param {Float64Array | number[] | LatencySketch} samples
 */
export function falseTimeoutRate(samples, timeoutMs) {
  ready("falseTimeoutRate");
  number("timeoutMs", timeoutMs, "a number of milliseconds");
  if (samples instanceof LatencySketch) return samples.fractionAbove(timeoutMs);
  const xs = float64("samples", samples);
  if (xs.length === 0) {
    core.countAbove(xs, timeoutMs, 0); // validates timeoutMs
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
  ready("tailShape");
  if (samples instanceof LatencySketch) {
    const t = LatencySketch.core(samples, SKETCH_TOKEN).tailShape();
    return t === undefined ? null : decodeTail(t, 0);
  }
  const sketch = new core.LatencySketchCore(0.01);
  try {
    addAllTo(sketch, float64("samples", samples));
    const t = sketch.tailShape();
    return t === undefined ? null : decodeTail(t, 0);
  } finally {
    sketch.free();
  }
}

// ---- simulation -------------------------------------------------------------------

function part(param, value, like) {
  if (value === null || typeof value !== "object") throw new TypeError(`'${param}' must be an object like ${like}: current value is ${describe(value)}`);
  return value;
}

/**
 * Simulates per-attempt timeouts with retries on a lognormal body plus a
 * uniform slow tail (src/core/simulate.rs). Every policy sees the same calls.
 * @param {{ body: { medianMs: number, sigma: number }, tail?: { share: number, loMs: number, hiMs: number }, n?: number, seed?: number }} scenario
 * @param {{ timeoutMs: number, retries?: number }[]} [policies]
 */
export function simulate(scenario, policies = []) {
  ready("simulate");
  part("scenario", scenario, "{ body: { medianMs, sigma }, tail: { share, loMs, hiMs }, n, seed }");
  const body = part("scenario.body", scenario.body, "{ medianMs, sigma }");
  const tail = scenario.tail === undefined ? { share: 0, loMs: 0, hiMs: 0 } : part("scenario.tail", scenario.tail, "{ share, loMs, hiMs }");
  const medianMs = number("medianMs", body.medianMs, "a number of milliseconds");
  const sigma = number("sigma", body.sigma, "a number between 0 and 4");
  const share = number("share", tail.share, "a number between 0 and 1");
  const loMs = number("loMs", tail.loMs, "a number of milliseconds");
  const hiMs = number("hiMs", tail.hiMs, "a number of milliseconds");
  const n = number("n", scenario.n ?? 200_000, "a whole number of calls");
  const seed = number("seed", scenario.seed ?? 1, "a whole number");
  if (!Array.isArray(policies)) throw new TypeError(`'policies' must be an array of { timeoutMs, retries }: current value is ${describe(policies)}`);
  const timeouts = new Float64Array(policies.length);
  const retries = new Float64Array(policies.length);
  policies.forEach((p, i) => {
    part(`policies[${i}]`, p, "{ timeoutMs, retries }");
    timeouts[i] = number(`policies[${i}].timeoutMs`, p.timeoutMs, "a number of milliseconds");
    retries[i] = number(`policies[${i}].retries`, p.retries ?? 0, "a whole number");
  });
  const a = core.simulate(medianMs, sigma, share, loMs, hiMs, n, seed, timeouts, retries);
  const out = { scenario: { p50Ms: a[0], p90Ms: a[1], p99Ms: a[2], p999Ms: a[3] }, policies: [] };
  for (let i = 4; i < a.length; i += 8) {
    out.policies.push({
      timeoutMs: a[i],
      retries: a[i + 1],
      p50Ms: a[i + 2],
      p99Ms: a[i + 3],
      p999Ms: a[i + 4],
      failureRate: a[i + 5],
      extraLoad: a[i + 6],
      firstAttemptTimeoutRate: a[i + 7],
    });
  }
  return out;
}

// ---- Little's law -------------------------------------------------------------------

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000`. */
export function concurrencyBound(options) {
  ready("concurrencyBound");
  const o = part("options", options, "{ ratePerSec, timeoutMs }");
  number("ratePerSec", o.ratePerSec, "a number of requests per second");
  number("timeoutMs", o.timeoutMs, "a number of milliseconds");
  return core.concurrencyBound(o.ratePerSec, o.timeoutMs);
}

/** The longest timeout (ms) that keeps `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options) {
  ready("maxTimeoutFor");
  const o = part("options", options, "{ ratePerSec, limit }");
  number("ratePerSec", o.ratePerSec, "a number of requests per second");
  number("limit", o.limit, "a number of slots");
  return core.maxTimeoutFor(o.ratePerSec, o.limit);
}
