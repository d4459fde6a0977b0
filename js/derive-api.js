// The public API of `edge-deadline/derive` shared by its entry points
// (derive-index.js, derive-node.js, derive-workerd.js, derive-deno.js): latency
// data and the timeouts derived from it. Its own .wasm, loaded by
// derive-load.js; it works with the main entry's objects (a LatencySketch fed
// from a plan's trace records) because only plain JS values cross between them.
export { LatencySketch } from "./sketch.js";
export * from "./derive.js";
export * from "./prom.js";
export * from "./tail.js";
export * from "./simulate.js";
export * from "./little.js";
export * from "./breaker.js";
export * from "./limiter.js";
export { TimeoutBook, readFlush } from "./book.js";
