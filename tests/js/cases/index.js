// Every JS test case, one module per concept (same names as src/core/ and js/).
import context from "./context.js";
import deadline from "./deadline.js";
import derive from "./derive.js";
import ergonomics from "./ergonomics.js";
import errors from "./errors.js";
import little from "./little.js";
import load from "./load.js";
import pipeline from "./pipeline.js";
import prom from "./prom.js";
import propagation from "./propagation.js";
import relay from "./relay.js";
import servertiming from "./servertiming.js";
import simulate from "./simulate.js";
import sketch from "./sketch.js";
import stall from "./stall.js";
import tail from "./tail.js";

export const cases = [...deadline, ...stall, ...pipeline, ...servertiming, ...context, ...relay, ...propagation, ...sketch, ...derive, ...prom, ...tail, ...simulate, ...little, ...load, ...errors, ...ergonomics];
