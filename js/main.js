// The main entry's code as one module: scripts/bundle.mjs bundles this file
// and everything it reaches (except what edge-deadline/derive shares, which
// goes to shared.js) into pkg/main.js. Each runtime's entry (index.js,
// node.js, deno.js, workerd.js) is a few lines on top of it, and
// edge-deadline/hono imports it too, so whatever combination of entries an
// application imports, it gets one copy of the clock, the timer queue, the
// ambient deadline and the loaded core.
//
// Not a public entry (package.json does not export it). Besides the public
// API (api.js) it exports what the entries, the Hono middleware and the
// package's own tests and benches reach: they must use this copy, never a
// second one of their own.
export * from "./api.js";
export { autoload, initFrom } from "./load.js";
export { metric } from "./servertiming.js";
// For the Hono middleware: Deadline.forRequest's fold with what set it, and the body watcher.
export { requestDeadline } from "./deadline.js";
// @ts-expect-error internal: not in the public request.d.ts
export { whenSent } from "./request.js";
export { MAX_TIMER_MS, child, setClock, timerMs } from "./timers.js";
export { pending } from "./keepalive.js";
// The tracing hook, for the tests of what other modules report through it (tests/js/cases/otel.js).
// @ts-expect-error internal: not in the public otel.d.ts
export { tracing } from "./otel.js";

// Raw glue functions, for the tests (the core's own list of header formats)
// and the "design:" rows of bench/ (a raw Wasm call against the API's). An
// object, not `export * as`: a bundler drops it when nothing reads it.
// The streamed read's machine, the names of its answers and its retry loop, for the conformance op `read` (tests/js/cases/conformance.js).
// Which content types are an event stream, for the conformance op `sse.isEventStream`.
import { budget, headerFormats, initSync, isEventStream, planCap, planNew, planRefusal, ReadAction, ReadEnding, ReadFlag, ReadHow, ReadMachine, RetryRun } from "./edge_deadline.js";
export const glue = { budget, headerFormats, initSync, isEventStream, planCap, planNew, planRefusal, ReadAction, ReadEnding, ReadFlag, ReadHow, ReadMachine, RetryRun };
