// edge-deadline/derive's code as one module: scripts/bundle.mjs bundles this
// file and everything it reaches (except what the main entry shares, in
// shared.js) into pkg/derive-main.js; each runtime's derive entry is a few
// lines on top of it. Not a public entry: besides the public API
// (derive-api.js) it exports what the entries and the package's own tests
// reach (the glue, whose `initSync()` hands back the instance's memory).
export * from "./derive-api.js";
export { autoload, initFrom, isReady, notReady } from "./derive-load.js";
// For edge-deadline/durable (js/durable.js), which drives the fleet aggregator's core.
export { FleetAggregatorCore } from "./edge_deadline_derive.js";
// The breaker's core and the names of what it answers, for the breaker cases (tests/js/cases/breaker.js).
import { BreakerCore, breakerErrorOutcome, CallOutcome, Found, initSync } from "./edge_deadline_derive.js";
export const glue = { BreakerCore, breakerErrorOutcome, CallOutcome, Found, initSync };
