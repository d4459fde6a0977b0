// edge-deadline/durable for workerd: the derive entry of this runtime loads its WebAssembly core at the first request.
// TimeoutAggregator is a DurableObject here, so that isolates reach its flush and table by RPC through the binding.
import { DurableObject } from "cloudflare:workers";
import "./derive-workerd.js";
import { aggregatorClass } from "./durable.js";

export const TimeoutAggregator = aggregatorClass(DurableObject);
export { aggregatorBinding, kvAggregator } from "./durable.js";
