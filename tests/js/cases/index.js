// Every JS test case, one module per concept (same names as src/core/ and js/).
import deadline from "./deadline.js";
import derive from "./derive.js";
import load from "./load.js";
import pipeline from "./pipeline.js";
import stall from "./stall.js";

export const cases = [...deadline, ...stall, ...pipeline, ...derive, ...load];
