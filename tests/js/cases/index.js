// Every JS test case, one module per concept (same names as src/core/ and js/).
import budget from "./budget.js";
import caps from "./caps.js";
import context from "./context.js";
import deadline from "./deadline.js";
import derive from "./derive.js";
import ergonomics from "./ergonomics.js";
import errors from "./errors.js";
import headers from "./headers.js";
import hedge from "./hedge.js";
import load from "./load.js";
import plan from "./plan.js";
import relay from "./relay.js";
import retry from "./retry.js";
import servertiming from "./servertiming.js";
import stall from "./stall.js";
import timers from "./timers.js";

export const cases = [...deadline, ...timers, ...stall, ...retry, ...budget, ...hedge, ...plan, ...servertiming, ...context, ...relay, ...headers, ...caps, ...derive, ...load, ...errors, ...ergonomics];
