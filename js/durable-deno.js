// edge-deadline/durable for deno: the derive entry of this runtime loads its WebAssembly core at the first request.
import "./derive-deno.js";

export { TimeoutAggregator, aggregatorBinding, kvAggregator } from "./durable.js";
