// Type checks shared by every module of the JS API. Wasm cannot see JS types,
// so these run at the JS edge and throw TypeErrors in one wording:
//   'param' must be <what>: current value is <description>
// with `.param` and `.code` (js/errors.js `argumentError`). Every *range*
// check (NaN, ±∞, negatives, limits) is the core's, except for values the
// core never receives (`count`).
//
// This module imports only js/errors.js: "is this a Deadline" is the brand
// (`isDeadline`), so deadline.js, the modules built on it and this one import
// each other in no circle.

import { argumentError, CODES, isDeadline } from "./errors.js";

/** How a value is named in an error message: `"5" (a string)`, `10n (a BigInt)`, `a Uint8Array`. */
export function describe(value) {
  if (value === null) return "null";
  if (typeof value === "bigint") return `${value}n (a BigInt)`;
  if (typeof value === "string") return JSON.stringify(value.length > 64 ? value.slice(0, 64) + "…" : value) + " (a string)";
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const name = value.constructor?.name;
    return !name || name === "Object" ? "an object" : `${/^[AEIO]/i.test(name) ? "an" : "a"} ${name}`;
  }
  return String(value);
}

/** `where` (optional) prefixes the message: `row 3: 'ms' must be …`. */
export function typeError(param, expected, value, where = "") {
  return argumentError(
    "type",
    CODES.INVALID_TYPE,
    param,
    `${where && `${where}: `}'${param}' must be ${expected}: current value is ${describe(value)}`,
  );
}

/** A number (the core checks NaN, ±∞ and the range). */
export function number(param, value, what = "a number of milliseconds", where = "") {
  if (typeof value !== "number") throw typeError(param, what, value, where);
  return value;
}

/** An optional number: `undefined` passes through. */
export function optNumber(param, value, what) {
  return value === undefined ? undefined : number(param, value, what);
}

export function str(param, value, what = "a string") {
  if (typeof value !== "string") throw typeError(param, what, value);
  return value;
}

export function bool(param, value) {
  if (typeof value !== "boolean") throw typeError(param, "true or false", value);
  return value;
}

export function fn(param, value, what = "a function") {
  if (typeof value !== "function") throw typeError(param, what, value);
  return value;
}

/** An options object (required unless `optional`). */
export function obj(param, value, what, optional = false) {
  if (optional && value === undefined) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw typeError(param, what, value);
  return value;
}

/** A Deadline of this copy of the package or another (the brand, js/errors.js). */
export function deadline(param, value, where = "") {
  if (!isDeadline(value)) throw typeError(param, "a Deadline (Deadline.in(ms) or Deadline.at(instantMs))", value, where);
  return value;
}

export function isAbortSignal(s) {
  return (
    s != null &&
    typeof s === "object" &&
    typeof s.aborted === "boolean" &&
    typeof s.addEventListener === "function" &&
    typeof s.removeEventListener === "function"
  );
}

export function optSignal(param, value) {
  if (value === undefined) return undefined;
  if (!isAbortSignal(value)) throw typeError(param, "an AbortSignal", value);
  return value;
}

/**
 * A whole count for a `u32` parameter. Checked here: a count crosses into
 * Wasm as a `u32`, which would wrap or truncate what the core then checks.
 */
export function count(param, value) {
  number(param, value, "a whole number");
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    const code = !Number.isFinite(value) ? CODES.NOT_FINITE : value < 0 ? CODES.NEGATIVE : value > 0xffff_ffff ? CODES.TOO_LARGE : CODES.NOT_WHOLE;
    throw argumentError("range", code, param, `'${param}' must be a whole number: current value is ${value}`);
  }
  return value;
}

// ---- reads for the Wasm boundary's deserializer (src/wasm/de.rs) ----------------------------
// Reading a user's value can run user code (a getter, a proxy trap, an iterator) that throws.
// An exception must never unwind through Wasm frames, and a call through a `catch` import costs
// more from Wasm (measured: `platformDeadline` and `plan()` slower with one per field),
// so these read a whole struct, sequence or map in one call and never throw: they say what went
// wrong instead (below). Only fresh arrays go back to Wasm, whose elements it reads without user code.

/**
 * `keys.map((k) => value[k])` when every read went; `null` when `value` is
 * not an object; the index (a number) of the key whose read threw. Wasm
 * tells the three apart by their type, in the one call.
 * @param {any} value @param {string[]} keys
 * @returns {unknown[] | null | number}
 */
export function readFields(value, keys) {
  if (typeof value !== "object" || value === null) return null;
  const n = keys.length;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    try {
      out[i] = value[keys[i]];
    } catch {
      return i;
    }
  }
  return out;
}

/**
 * The elements of an array or another iterable as a fresh array; `undefined`
 * when `value` is neither; `"threw"` when reading threw; `"long"` when it has
 * more than `max` (checked before an array's elements are read).
 * @param {any} value @param {number} max
 * @returns {any[] | undefined | "threw" | "long"}
 */
export function readElements(value, max) {
  try {
    if (Array.isArray(value)) {
      const n = value.length;
      if (n > max) return "long";
      const out = new Array(n);
      for (let i = 0; i < n; i++) out[i] = value[i];
      return out;
    }
    if (typeof value !== "object" || value === null || typeof value[Symbol.iterator] !== "function") return undefined;
    const out = Array.from(value);
    return out.length > max ? "long" : out;
  } catch {
    return "threw";
  }
}

/**
 * A map's entries as fresh `[key, value]` arrays: an iterable's pairs (a
 * `Map`), else a plain object's own enumerable entries; the same answers as
 * readElements otherwise.
 * @param {any} value @param {number} max
 */
export function readEntries(value, max) {
  if (typeof value !== "object" || value === null) return undefined;
  try {
    const pairs = typeof value[Symbol.iterator] === "function" ? readElements(value, max) : Object.entries(value);
    if (!Array.isArray(pairs)) return pairs;
    for (let i = 0; i < pairs.length; i++) pairs[i] = [pairs[i][0], pairs[i][1]];
    return pairs;
  } catch {
    return "threw";
  }
}

/**
 * A server's own duration option, checked in JS where the core cannot name it (an option read before the core
 * loads, or one passed to the core under another name). The codes are the core's words for the same faults.
 */
export function duration(param, value) {
  number(param, value);
  const code = !Number.isFinite(value) ? "NOT_FINITE" : value < 0 ? "NEGATIVE" : value > Number.MAX_SAFE_INTEGER ? "TOO_LARGE" : null;
  if (code) throw argumentError("range", code, param, `'${param}' must be a finite number of milliseconds ≥ 0: current value is ${describe(value)}`);
  return value;
}

/** The message of an options object that sets no bound (Hono's middleware, `Deadline.forRequest`). */
export const NO_BOUND = "must set a bound: 'budgetMs', a 'platform' or 'caps' (e.g. { budgetMs: 8000 })";

/** Whether `x` has a Response's shape (a status, `ok`, a body and headers): one from any realm or polyfill. */
export function looksLikeResponse(x) {
  return x != null && typeof x === "object" && typeof x.status === "number" && typeof x.ok === "boolean" && "body" in x && x.headers != null;
}
