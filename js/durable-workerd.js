// edge-deadline/durable for workerd: the derive entry of this runtime loads its WebAssembly core at the first request.
import "./derive-workerd.js";

export { TimeoutAggregator, kvAggregator } from "./durable.js";
