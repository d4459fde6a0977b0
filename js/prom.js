// parsePrometheus: histograms from the text exposition format (what
// `/metrics` serves) or from the HTTP API's instant-query response, parsed
// by the Wasm core (src/core/prom.rs, bound in src/wasm/prom.rs). This file
// checks JS types, hands exposition text over in pieces and query results as
// they are; the histograms come back as plain objects (type `Histogram`,
// generated from the Rust type).
//
// # Invariants
// 1. Exposition text longer than the core parses is refused before it is
//    copied into Wasm memory (which never shrinks); Wasm memory holds one
//    piece of the text at a time.
// 2. Bad input is a TypeError or RangeError with `.param` (`input`,
//    `input.data.result[2].value`, `options.metric`) and `.code`; the
//    message names the line or result and the field.

import * as core from "./edge_deadline_derive.js";
import { argumentError, CODES } from "./errors.js";
import { isReady, notReady } from "./derive-load.js";
import { describe, obj, str, typeError } from "./validate.js";

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

/** The histograms in exposition text (two passes without a metric). */
function parseExposition(text, metric) {
  // Refused before the copy into Wasm memory, which would keep the space for
  // good; the core checks the exact byte length of what it parses.
  core.checkExpositionLength(text.length);
  const parser = new core.PromTextCore(metric);
  try {
    if (metric === undefined) for (const piece of pieces(text)) parser.scan(piece);
    for (const piece of pieces(text)) parser.feed(piece);
    return parser.finish();
  } finally {
    parser.free();
  }
}

/** Checks the types of an `/api/v1/query` response; the core reads its results. */
function fromQueryResponse(response, metric) {
  if (response.status !== "success") {
    const why = typeof response.error === "string" ? `: ${response.error}` : "";
    throw argumentError(
      "range",
      CODES.QUERY_FAILED,
      "input.status",
      `'input' is a Prometheus response with status ${JSON.stringify(response.status)}, not "success"${why}`,
    );
  }
  const data = response.data;
  if (data?.resultType !== "vector") {
    throw argumentError(
      "range",
      CODES.UNKNOWN_VALUE,
      "input.data.resultType",
      `'input.data.resultType' must be "vector" (an instant query such as NAME_bucket or increase(NAME_bucket[1h])): current value is ${describe(data?.resultType)}`,
    );
  }
  if (!Array.isArray(data.result)) throw typeError("input.data.result", "an array", data.result);
  data.result.forEach((r, i) => {
    const at = `input.data.result[${i}]`;
    if (r === null || typeof r !== "object" || r.metric === null || typeof r.metric !== "object") {
      throw typeError(`${at}.metric`, "an object of labels", r?.metric);
    }
    if (!Array.isArray(r.value) || r.value.length !== 2 || typeof r.value[0] !== "number" || typeof r.value[1] !== "string") {
      throw typeError(`${at}.value`, '[timestamp, "number"]', r.value);
    }
    for (const [k, v] of Object.entries(r.metric)) str(`${at}.metric.${k}`, v);
  });
  return core.histogramsFromResults(data.result, metric);
}

/**
 * Histograms from Prometheus: the text exposition format (what `/metrics`
 * serves), or the HTTP API's instant-query response (`/api/v1/query`), as
 * text or already parsed. Bucket bounds are converted to ms (`_seconds`
 * families × 1000).
 * @param {string | object} input
 * @param {{ metric?: string }} [options] the histogram family (needed when several are present)
 */
export function parsePrometheus(input, options) {
  if (!isReady()) notReady("parsePrometheus");
  const o = obj("options", options, "an object like { metric }", true);
  const metric = o.metric === undefined ? undefined : str("options.metric", o.metric);
  if (typeof input === "string" && !input.trimStart().startsWith("{")) return parseExposition(input, metric);
  let response = input;
  if (typeof input === "string") {
    try {
      response = JSON.parse(input);
    } catch (error) {
      throw argumentError("range", "SYNTAX", "input", `'input' looks like a Prometheus query response but is not valid JSON: ${error.message}`);
    }
  }
  if (response === null || typeof response !== "object") {
    throw typeError("input", "exposition text or a Prometheus query response", input);
  }
  return fromQueryResponse(response, metric);
}
