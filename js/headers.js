// Deadline propagation headers. Encoding, strict parsing and the
// transit/local-cap clamp are the Wasm core's (src/core/headers.rs); this
// file reads the clock and finds the headers in a `Headers` or a plain
// object. Header formats cross by name (the core's string enum), so no table
// of codes is kept here.
//
// # Invariants
// 1. What is sent is the remaining duration at the moment of the call,
//    rounded down (never an instant on this machine's clock).
// 2. A deadline read from headers is never later than `now + maxMs`: a caller
//    can shorten ours, never extend it. Every copy of a header counts (two
//    spellings of one name in a plain object, a repeated field joined with
//    commas, split by the core): a bad copy is refused alone and the earliest
//    valid one wins, so a second copy can never extend the first.
// 3. Nothing here holds a timer, a listener or Wasm memory.
//
// This module computes instants and never builds a Deadline (js/deadline.js
// does, from `readDeadlineHeaders` here and `readPlatformCaps` in js/caps.js),
// so the two do not import each other.
//
// # Malformed incoming headers
// A header's value comes from the caller, possibly an attacker, so a bad one
// is not the server's programming error and must not look like one (a
// `RangeError` is what the server's own bad `maxMs` throws). By default
// (`invalid: "ignore"`) a malformed header is skipped: the local cap or the
// other headers set the deadline, and the rejection is reported in
// `deadlineFromHeaders(...).rejected` as a branded `InvalidHeader` naming the
// header. With `invalid: "throw"` that same `InvalidHeader` is thrown, for a
// server that answers 400.

import * as core from "./edge_deadline.js";
import { InvalidHeader } from "./errors.js";
import { isReady, notReady } from "./load.js";
import { now } from "./timers.js";
import * as check from "./validate.js";

/**
 * The header names this package reads and writes, in the order `fromHeaders`
 * consults them: a copy of the core's list (`HeaderFormat` in
 * src/core/headers.rs), readable before `init()`; the headers case checks
 * that the two are equal.
 */
export const deadlineHeaders = Object.freeze([
  "grpc-timeout",
  "connect-timeout-ms",
  "x-envoy-expected-rq-timeout-ms",
  "edge-deadline-remaining-ms",
]);

const DEFAULT_FORMAT = "edge-deadline-remaining-ms";

/** Lowercase names, checked by the core (an unknown name is its RangeError, naming `param`). */
function formatList(param, value, fallback) {
  if (value === undefined) return fallback;
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((f) => typeof f !== "string")) {
    throw check.typeError(param, `a header name or a non-empty array of them (${deadlineHeaders.join(", ")})`, value);
  }
  return list.map((f) => core.headerFormat(f, param));
}

/** The header value stating `remainingMs` in `format` (rounded down). */
export function encodeHeader(format, remainingMs) {
  if (!isReady()) notReady("encodeHeader");
  check.str("format", format, `one of ${deadlineHeaders.join(", ")}`);
  check.number("remainingMs", remainingMs);
  return core.encodeHeader(format, remainingMs);
}

/** The remaining duration (ms) a header value states; strict (see src/core/headers.rs). */
export function parseHeader(format, value) {
  if (!isReady()) notReady("parseHeader");
  check.str("format", format, `one of ${deadlineHeaders.join(", ")}`);
  check.str("value", value);
  return core.parseHeader(format, value);
}

/**
 * Headers carrying what is left of `deadline`, as a plain object to spread
 * into `fetch`'s `headers` or gRPC metadata.
 * @param {{ format?: string | string[] }} [options] default `edge-deadline-remaining-ms`
 */
export function toHeaders(deadline, options) {
  if (!isReady()) notReady("toHeaders");
  check.deadline("deadline", deadline);
  const { format } = check.obj("options", options, "an object like { format }", true);
  const formats = formatList("options.format", format, [DEFAULT_FORMAT]);
  const remaining = deadline.remaining();
  const out = {};
  for (const f of formats) out[f] = core.encodeHeader(f, remaining);
  return out;
}

// ---- outgoing requests (fetchWithDeadline) ------------------------------------

/**
 * The formats `fetchWithDeadline` sends for its `propagate` option: the
 * package's own header by default, the named ones, or none for `false`.
 * Checked before any I/O.
 */
export function propagateFormats(value) {
  if (value === undefined || value === true) return [DEFAULT_FORMAT];
  if (value === false) return [];
  return formatList("propagate", value, undefined);
}

/**
 * Whether `input` goes to another origin than the browser page's (or browser
 * worker's) own. There a header of ours would make the request "not simple",
 * so the browser sends a CORS preflight first, and an API that allows any
 * origin but does not answer OPTIONS fails: `fetchWithDeadline` adds its
 * default header only where it cannot change the request's CORS mode.
 * Outside browsers (Node, Deno, workerd: no CORS) this is always false.
 * @param {RequestInfo | URL} input
 */
export function crossOriginInBrowser(input) {
  if (globalThis.Deno !== undefined || globalThis.process?.versions?.node !== undefined) return false;
  const origin = globalThis.location?.origin;
  if (typeof origin !== "string") return false; // no page: workerd, a server runtime
  let href;
  if (typeof input === "string") href = input;
  else if (input instanceof URL) href = input.href;
  else if (typeof Request !== "undefined" && input instanceof Request) href = input.url;
  else href = String(input);
  try {
    return new URL(href, globalThis.location.href).origin !== origin;
  } catch {
    return true; // not a URL: fetch rejects it; add nothing
  }
}

/**
 * `init` with what is left of `deadline` added to the request's headers in
 * each of `formats` (lowercase names from `propagateFormats`), read at this
 * moment, so the upstream is told exactly the time not yet spent. The
 * request's headers are kept (init's, or a Request input's when init has
 * none); a deadline header the caller set is theirs and is not overwritten.
 */
export function withBudgetHeaders(input, init, deadline, formats) {
  if (formats.length === 0) return init;
  const own = init?.headers ?? (typeof Request !== "undefined" && input instanceof Request ? input.headers : undefined);
  const headers = new Headers(own);
  const remaining = deadline.remaining();
  for (const f of formats) if (!headers.has(f)) headers.set(f, core.encodeHeader(f, remaining));
  return { ...init, headers };
}

/**
 * Every value of header `name` (lowercase), each spelling's. A repeated field
 * arrives joined with ", " (what `Headers.get` answers); the core splits it,
 * so each copy is parsed and refused alone.
 */
function readHeader(headers, lowerKeys, name, out) {
  if (lowerKeys === null) {
    const value = headers.get(name);
    if (value !== null && value !== undefined) out.push(value);
    return;
  }
  for (const key of lowerKeys.get(name) ?? []) {
    const value = headers[key];
    if (value === undefined) continue;
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) out.push(...value);
    else if (typeof value === "string") out.push(value);
    else throw check.typeError(`headers["${key}"]`, "a string", value);
  }
}

/**
 * The instant a request's headers ask for, clamped to `maxMs`, with what set
 * it: `{ at, signal, source, rejected }` (`signal`: `options.signal`; `source`: the header name, or `null`
 * when the local cap did; `rejected`: `[{ header, error }]`, one per malformed
 * value, `error` an `InvalidHeader`). A malformed header is ignored unless
 * `invalid: "throw"` (see "Malformed incoming headers" above).
 * @param {Headers | Record<string, string | string[] | undefined>} headers
 * @param {{ maxMs: number, transitMs?: number, formats?: string | string[], invalid?: "throw" | "ignore", signal?: AbortSignal }} options
 */
export function readDeadlineHeaders(headers, options) {
  if (!isReady()) notReady("Deadline.fromHeaders");
  const isHeaders = headers != null && typeof headers === "object" && typeof headers.get === "function" && typeof headers.has === "function";
  if (!isHeaders) check.obj("headers", headers, "a Headers or a plain object of header values");
  const o = check.obj("options", options, "an object like { maxMs, transitMs }");
  check.number("options.maxMs", o.maxMs);
  check.optNumber("options.transitMs", o.transitMs);
  const formats = formatList("options.formats", o.formats, deadlineHeaders);
  const invalid = o.invalid ?? "ignore";
  if (invalid !== "throw" && invalid !== "ignore") throw check.typeError("options.invalid", `"throw" or "ignore"`, invalid);
  const signal = check.optSignal("options.signal", o.signal);
  let lowerKeys = null;
  if (!isHeaders) {
    lowerKeys = new Map();
    for (const key of Object.keys(headers)) {
      const lower = key.toLowerCase();
      const keys = lowerKeys.get(lower);
      if (keys) keys.push(key);
      else lowerKeys.set(lower, [key]);
    }
  }
  const present = [];
  const values = [];
  for (const header of formats) {
    values.length = 0;
    readHeader(headers, lowerKeys, header, values);
    for (const value of values) present.push({ header, value });
  }
  const { at, source, rejected: refused } = core.earliestIncoming(now(), present, o);
  // The core's code and words (its template, filled here) for each refused
  // value, as a branded InvalidHeader (the caller's header, not the server's
  // bad argument: see above).
  const rejected = refused.map(({ index, code, message }) => {
    const { header } = present[index];
    return { header, error: Object.assign(new InvalidHeader(header, message), { code }) };
  });
  if (invalid === "throw" && rejected.length) throw rejected[0].error;
  return { at, signal, source: source == null ? null : present[source].header, rejected };
}
