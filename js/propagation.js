// Deadline propagation headers and platform caps. Encoding, strict parsing,
// the transit/local-cap clamp (src/core/headers.rs) and the cap fold
// (src/core/caps.rs) are the Wasm core's; this file reads the clock, finds
// the headers in a `Headers` or a plain object, and builds the Deadline.
//
// # Invariants
// 1. What is sent is the remaining duration at the moment of the call,
//    rounded down (never an instant on this machine's clock).
// 2. A deadline read from headers is never later than `now + maxMs`: a caller
//    can shorten ours, never extend it. Every copy of a header counts (two
//    spellings of one name in a plain object, a repeated field joined with
//    commas): the earliest wins, so a second copy can never extend the first.
// 3. Nothing here holds a timer, a listener or Wasm memory.
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
import { Deadline } from "./deadline.js";
import { InvalidHeader } from "./errors.js";
import { isReady, notReady } from "./load.js";
import * as check from "./validate.js";

const now = () => performance.now();

/** The header names this package reads and writes, in the order `fromHeaders` consults them. */
export const deadlineHeaders = Object.freeze([
  "grpc-timeout",
  "connect-timeout-ms",
  "x-envoy-expected-rq-timeout-ms",
  "edge-deadline-remaining-ms",
]);

const DEFAULT_FORMAT = "edge-deadline-remaining-ms";

const CODES = new Map(deadlineHeaders.map((name, i) => [name, i]));

/** A header name's index in `deadlineHeaders` (how formats cross into Wasm); the core's RangeError for others. */
function formatCode(name) {
  return CODES.get(name) ?? CODES.get(name.toLowerCase()) ?? core.headerFormat(name);
}

/** Lowercase names, checked. */
function formatList(param, value, fallback) {
  if (value === undefined) return fallback;
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((f) => typeof f !== "string")) {
    throw new TypeError(`'${param}' must be a header name or a non-empty array of them (${deadlineHeaders.join(", ")}): current value is ${check.describe(value)}`);
  }
  return list.map((f) => deadlineHeaders[formatCode(f)]);
}

/** The header value stating `remainingMs` in `format` (rounded down). */
export function encodeHeader(format, remainingMs) {
  if (!isReady()) notReady("encodeHeader");
  check.str("format", format, `one of ${deadlineHeaders.join(", ")}`);
  check.number("remainingMs", remainingMs);
  return core.encodeHeader(formatCode(format), remainingMs);
}

/** The remaining duration (ms) a header value states; strict (see src/core/headers.rs). */
export function parseHeader(format, value) {
  if (!isReady()) notReady("parseHeader");
  check.str("format", format, `one of ${deadlineHeaders.join(", ")}`);
  check.str("value", value);
  return core.parseHeader(formatCode(format), value);
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
  for (const f of formats) out[f] = core.encodeHeader(/** @type {number} */ (CODES.get(f)), remaining);
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
  for (const f of formats) if (!headers.has(f)) headers.set(f, core.encodeHeader(/** @type {number} */ (CODES.get(f)), remaining));
  return { ...init, headers };
}

/** Every value of header `name` (lowercase): each spelling's, each comma-separated element. */
function readHeader(headers, lowerKeys, name, out) {
  if (lowerKeys === null) {
    const value = headers.get(name);
    if (value !== null && value !== undefined) splitInto(value, out);
    return;
  }
  for (const key of lowerKeys.get(name) ?? []) {
    const value = headers[key];
    if (value === undefined) continue;
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) value.forEach((v) => splitInto(v, out));
    else if (typeof value === "string") splitInto(value, out);
    else throw new TypeError(`'headers["${key}"]' must be a string: current value is ${check.describe(value)}`);
  }
}

// A repeated field arrives joined with ", " (what `Headers.get` answers); no
// deadline format has a comma, so each element is a value of its own. A value
// longer than a few copies could be is not split (an attacker's million
// commas stay one value, refused by its length).
const MAX_SPLIT_LEN = 256;

function splitInto(value, out) {
  if (value.length <= MAX_SPLIT_LEN && value.includes(",")) out.push(...value.split(","));
  else out.push(value);
}

/**
 * The deadline a request's headers ask for, clamped to `maxMs`, with what set
 * it: `{ deadline, source, rejected }` (`source`: the header name, or `null`
 * when the local cap did; `rejected`: `[{ header, error }]`, one per malformed
 * value, `error` an `InvalidHeader`). A malformed header is ignored unless
 * `invalid: "throw"` (see "Malformed incoming headers" above).
 * @param {Headers | Record<string, string | string[] | undefined>} headers
 * @param {{ maxMs: number, transitMs?: number, formats?: string | string[], invalid?: "throw" | "ignore", signal?: AbortSignal }} options
 */
export function deadlineFromHeaders(headers, options) {
  if (!isReady()) notReady("Deadline.fromHeaders");
  const isHeaders = headers != null && typeof headers === "object" && typeof headers.get === "function" && typeof headers.has === "function";
  if (!isHeaders) check.obj("headers", headers, "a Headers or a plain object of header values");
  const o = check.obj("options", options, "an object like { maxMs, transitMs }");
  check.number("options.maxMs", o.maxMs);
  const transitMs = o.transitMs === undefined ? 0 : check.number("options.transitMs", o.transitMs);
  const formats = formatList("options.formats", o.formats, deadlineHeaders);
  const invalid = o.invalid ?? "ignore";
  if (invalid !== "throw" && invalid !== "ignore") {
    throw new TypeError(`'options.invalid' must be "throw" or "ignore": current value is ${check.describe(invalid)}`);
  }
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
  const names = [];
  const values = [];
  for (const name of formats) {
    const before = values.length;
    readHeader(headers, lowerKeys, name, values);
    for (let i = before; i < values.length; i++) names.push(name);
  }
  const codes = Uint8Array.from(names, (name) => /** @type {number} */ (CODES.get(name)));
  const [at, source, ...rejectedAt] = core.earliestIncoming(now(), codes, values, transitMs, o.maxMs);
  const rejected = rejectedAt.map((i) => ({ header: names[i], error: invalidHeader(codes[i], names[i], values[i]) }));
  if (invalid === "throw" && rejected.length) throw rejected[0].error;
  return { deadline: Deadline.at(at, signal ? { signal } : undefined), source: source < 0 ? null : names[source], rejected };
}

/** The core's words for a refused value (a rare path: parsed again), as an `InvalidHeader`. */
function invalidHeader(code, name, value) {
  try {
    core.parseHeader(code, value);
  } catch (error) {
    return new InvalidHeader(name, error.message, { cause: error });
  }
  return new InvalidHeader(name, `'${name}' was refused`); // unreachable: the core refused it
}

/** `Deadline.fromHeaders`: the deadline of {@link deadlineFromHeaders}. */
export function fromHeaders(headers, options) {
  return deadlineFromHeaders(headers, options).deadline;
}

// ---- platform caps -----------------------------------------------------------

const BOUNDS = ["product", "wall", "first-byte"];

/**
 * The built-in platform caps, each with its source and the date it was read
 * (src/core/caps.rs). `plan`/`trigger` `null`: every plan/trigger; `ms`
 * `null`: the platform documents no such limit.
 */
export function platformCaps() {
  if (!isReady()) notReady("platformCaps");
  const text = core.builtinCapsText();
  const ms = core.builtinCapsMs();
  const out = [];
  for (let i = 0; i * 7 < text.length; i++) {
    const [platform, plan, trigger, kind, note, source, retrieved] = text.slice(i * 7, i * 7 + 7);
    const value = ms[i * 2];
    const max = ms[i * 2 + 1];
    out.push(
      Object.freeze({
        platform,
        plan: plan || null,
        trigger: trigger || null,
        kind,
        ms: Number.isNaN(value) ? null : value,
        configurableMaxMs: Number.isNaN(max) ? null : max,
        note,
        source,
        retrieved,
      }),
    );
  }
  return out;
}

/**
 * `now + min(product cap, the platform's wall-clock caps) − fallbackReserveMs`,
 * with which cap bound it, the CPU budget (reported, never folded in) and the
 * sources of the figures used: `{ deadline, bound, cpuMs, sources }`.
 * `platform: "custom"` takes the caps from `options.caps` alone.
 */
export function platformDeadline(options) {
  if (!isReady()) notReady("Deadline.forPlatform");
  const o = check.obj("options", options, "an object like { platform, productMs, fallbackReserveMs }");
  const platform = check.str("options.platform", o.platform, `one of "cloudflare-workers", "deno-deploy", "vercel-edge", "custom"`);
  const plan = o.plan === undefined ? undefined : check.str("options.plan", o.plan, `"free" or "paid"`);
  const trigger = o.trigger === undefined ? "fetch" : check.str("options.trigger", o.trigger, `one of "fetch", "wait-until", "cron", "queue"`);
  check.number("options.productMs", o.productMs);
  check.number("options.fallbackReserveMs", o.fallbackReserveMs);
  const caps = check.obj("options.caps", o.caps, "an object like { wallMs, firstByteMs, cpuMs }", true);
  const wallMs = check.optNumber("options.caps.wallMs", caps.wallMs);
  const firstByteMs = check.optNumber("options.caps.firstByteMs", caps.firstByteMs);
  const cpuMs = check.optNumber("options.caps.cpuMs", caps.cpuMs);
  const signal = check.optSignal("options.signal", o.signal);
  const t = now();
  let answer;
  let sources;
  if (platform === "custom") {
    if (plan !== undefined || o.trigger !== undefined) {
      throw new TypeError(`'options.plan' and 'options.trigger' apply to built-in platforms, not "custom": pass the caps in 'options.caps'`);
    }
    answer = core.forCustomPlatform(t, o.productMs, o.fallbackReserveMs, wallMs, firstByteMs, cpuMs);
    sources = [];
  } else {
    answer = core.forPlatform(t, platform, plan, trigger, o.productMs, o.fallbackReserveMs, wallMs, firstByteMs, cpuMs);
    sources = core.platformSources(platform, plan, trigger);
  }
  const [at, bound, cpu] = answer;
  return {
    deadline: Deadline.at(at, signal ? { signal } : undefined),
    bound: BOUNDS[bound],
    cpuMs: Number.isNaN(cpu) ? null : cpu,
    sources,
  };
}

/** `Deadline.forPlatform`: the deadline of {@link platformDeadline}. */
export function forPlatform(options) {
  return platformDeadline(options).deadline;
}
