// Every JS test case, one module per concept (same names as src/core/ and js/).
import context from "./context.js";
import deadline from "./deadline.js";
import derive from "./derive.js";
import ergonomics from "./ergonomics.js";
import errors from "./errors.js";
import load from "./load.js";
import pipeline from "./pipeline.js";
import propagation from "./propagation.js";
import relay from "./relay.js";
import servertiming from "./servertiming.js";
import stall from "./stall.js";
import timers from "./timers.js";

export const cases = [...deadline, ...timers, ...stall, ...pipeline, ...servertiming, ...context, ...relay, ...propagation, ...derive, ...load, ...errors, ...ergonomics];
