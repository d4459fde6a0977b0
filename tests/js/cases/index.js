// Every JS test case, one module per concept (same names as src/core/ and js/).
import alloc from "./alloc.js";
import retryBudget from "./retry_budget.js";
import caps from "./caps.js";
import conformance from "./conformance.js";
import context from "./context.js";
import deadline from "./deadline.js";
import derive from "./derive.js";
import ergonomics from "./ergonomics.js";
import errors from "./errors.js";
import headers from "./headers.js";
import hedge from "./hedge.js";
import limiter from "./limiter.js";
import little from "./little.js";
import breaker from "./breaker.js";
import otel from "./otel.js";
import load from "./load.js";
import plan from "./plan.js";
import prom from "./prom.js";
import relay from "./relay.js";
import retry from "./retry.js";
import servertiming from "./servertiming.js";
import simulate from "./simulate.js";
import sketch from "./sketch.js";
import stall from "./stall.js";
import tail from "./tail.js";
import timers from "./timers.js";

export const cases = [...deadline, ...timers, ...stall, ...retry, ...retryBudget, ...hedge, ...plan, ...otel, ...servertiming, ...context, ...relay, ...headers, ...caps, ...sketch, ...derive, ...prom, ...tail, ...simulate, ...little, ...limiter, ...breaker, ...load, ...alloc, ...errors, ...ergonomics, ...conformance];
