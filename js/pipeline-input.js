// Type checks shared by the pipeline modules (plan.js, retry.js,
// propagation.js). Wasm cannot see JS types, so these run at the JS edge and
// throw TypeErrors naming the parameter; every *range* check is the core's.

import { Deadline } from "./deadline.js";

export function describe(value) {
  if (value === null) return "null";
  if (typeof value === "bigint") return `${value}n (a BigInt)`;
  if (typeof value === "string") return JSON.stringify(value.length > 64 ? value.slice(0, 64) + "…" : value) + " (a string)";
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return String(value);
}

function typeError(param, expected, value) {
  return new TypeError(`'${param}' must be ${expected}: current value is ${describe(value)}`);
}

/** A number (the core checks NaN, ±∞ and the range). */
export function num(param, value, what = "a number of milliseconds") {
  if (typeof value !== "number") throw typeError(param, what, value);
  return value;
}

/** An optional number: `undefined` passes through. */
export function optNum(param, value, what) {
  return value === undefined ? undefined : num(param, value, what);
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

export function deadline(param, value) {
  if (!(value instanceof Deadline)) throw typeError(param, "a Deadline (Deadline.in(ms) or Deadline.at(instantMs))", value);
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

/** A whole count for a `u32` parameter; the core checks the range. */
export function count(param, value) {
  num(param, value, "a whole number");
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new RangeError(`'${param}' must be a whole number: current value is ${value}`);
  }
  return value;
}

/** 2^31 − 1 ms: hosts fire longer `setTimeout`s at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A host timer for `ms` (≥ 0), clamped to the host limit; callers re-arm past it. */
export function timerMs(ms) {
  return ms < MAX_TIMER_MS ? Math.ceil(ms) : MAX_TIMER_MS;
}
