// Little's law (src/core/little.rs, bound in src/wasm/little.rs):
// `concurrencyBound` and `maxTimeoutFor` compute it; `ConcurrencyLimiter`
// (js/limiter.js) bounds occupancy directly. The options objects cross as
// they are (types generated from the Rust structs); every range check is the
// core's, this file checks JS types.

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { number, obj } from "./validate.js";

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000`. */
export function concurrencyBound(options) {
  if (!isReady()) notReady("concurrencyBound");
  const o = obj("options", options, "an object like { ratePerSec, timeoutMs }");
  return core.concurrencyBound({
    ratePerSec: number("options.ratePerSec", o.ratePerSec, "a number of requests per second"),
    timeoutMs: number("options.timeoutMs", o.timeoutMs, "a number of milliseconds"),
  });
}

/** The longest timeout (ms) that keeps `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options) {
  if (!isReady()) notReady("maxTimeoutFor");
  const o = obj("options", options, "an object like { ratePerSec, limit }");
  return core.maxTimeoutFor({
    ratePerSec: number("options.ratePerSec", o.ratePerSec, "a number of requests per second"),
    limit: number("options.limit", o.limit, "a number of slots"),
  });
}
