// edge-deadline/durable for node: the derive entry of this runtime loads its WebAssembly core at the first request.
import "./derive-node.js";

export { TimeoutAggregator, aggregatorBinding, kvAggregator } from "./durable.js";
