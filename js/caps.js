// Platform caps as data, and the deadline they give an invocation. The
// figures (each with its source and the date it was read) and the fold into
// one deadline are the Wasm core's (src/core/caps.rs): they cross as data
// whose TypeScript is generated from the Rust types, with names and `bound`
// as string enums. This file reads the clock; it computes the instant and
// never builds a Deadline (js/deadline.js does, from `readPlatformCaps`), so
// the two do not import each other.
//
// Nothing here holds a timer, a listener or Wasm memory.

import * as core from "./edge_deadline.js";
import { isReady, notReady } from "./load.js";
import { now } from "./timers.js";
import * as check from "./validate.js";


/**
 * The built-in platform caps, each with its source and the date it was read
 * (src/core/caps.rs). `plan`/`trigger` `null`: every plan/trigger; `ms`
 * `null`: the platform documents no such limit.
 */
export function platformCaps() {
  if (!isReady()) notReady("platformCaps");
  return core.platformCaps().map((cap) => Object.freeze(cap));
}

/**
 * `now + min(product cap, the platform's wall-clock caps) − fallbackReserveMs`,
 * with which cap bound it, the CPU budget (reported, never folded in) and the
 * sources of the figures used: `{ at, signal, bound, cpuMs, sources }`.
 * `platform: "custom"` takes the caps from `options.caps` alone.
 */
export function readPlatformCaps(options) {
  if (!isReady()) notReady("Deadline.forPlatform");
  const o = check.obj("options", options, "an object like { platform, productMs, fallbackReserveMs }");
  check.str("options.platform", o.platform, `one of "cloudflare-workers", "deno-deploy", "vercel-edge", "netlify-edge", "aws-lambda", "node", "bun", "custom"`);
  if (o.plan !== undefined) check.str("options.plan", o.plan, `"free" or "paid"`);
  if (o.trigger !== undefined) check.str("options.trigger", o.trigger, `one of "fetch", "wait-until", "cron", "queue"`);
  check.number("options.productMs", o.productMs);
  check.number("options.fallbackReserveMs", o.fallbackReserveMs);
  const caps = check.obj("options.caps", o.caps, "an object like { wallMs, firstByteMs, cpuMs }", true);
  check.optNumber("options.caps.wallMs", caps.wallMs);
  check.optNumber("options.caps.firstByteMs", caps.firstByteMs);
  check.optNumber("options.caps.cpuMs", caps.cpuMs);
  const signal = check.optSignal("options.signal", o.signal);
  const { at, bound, cpuMs, fetchIdleMs, sources } = core.platformDeadline(now(), o);
  return { at, signal, bound, cpuMs, fetchIdleMs, sources };
}

/**
 * `Deadline.forLambda`'s instant: `now + min(what the invocation's context says is left, productMs) −
 * fallbackReserveMs`, with what bound it: `{ at, signal, bound, cpuMs, fetchIdleMs, sources }`.
 */
export function readLambdaCaps(context, options) {
  if (!isReady()) notReady("Deadline.forLambda");
  const c = check.obj("context", context, "the Lambda handler's context, with getRemainingTimeInMillis()");
  check.fn("context.getRemainingTimeInMillis", c.getRemainingTimeInMillis);
  const remainingMs = check.number("context.getRemainingTimeInMillis()", c.getRemainingTimeInMillis());
  const o = check.obj("options", options, "an object like { fallbackReserveMs }");
  const productMs = check.optNumber("options.productMs", o.productMs);
  check.number("options.fallbackReserveMs", o.fallbackReserveMs);
  const signal = check.optSignal("options.signal", o.signal);
  const { at, bound, cpuMs, fetchIdleMs, sources } = core.lambdaDeadline(now(), remainingMs, productMs, o.fallbackReserveMs);
  return { at, signal, bound, cpuMs, fetchIdleMs, sources };
}
