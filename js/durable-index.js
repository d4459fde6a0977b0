// edge-deadline/durable for bundlers and other runtimes: call `await init()` of edge-deadline/derive first.
import "./derive-index.js";

export { TimeoutAggregator, aggregatorBinding, kvAggregator } from "./durable.js";
