// OpenTelemetry without a dependency. The package never imports
// `@opentelemetry/api`: an application that has it hands the module in, once
// (`traceWith(api)`) or per call (the `otel` option), and the package makes
// its spans through what it was given. Nothing is loaded, looked up or
// allocated for tracing until then, so Workers, Deno, browsers and Node with
// nothing installed run the same code as before.
//
// Why the API module and not a Tracer alone: a Tracer can start a span, but
// only the module can make a context that holds a span
// (`trace.setSpan(context, span)`), and that context is how a span gets its
// parent (`tracer.startSpan(name, options, context)`) and how the
// application's own spans inside a step or an attempt find theirs
// (`context.with`). A Tracer may be given next to it (`{ tracer }`);
// otherwise the package asks the module for `getTracer("edge-deadline")`,
// which follows whatever provider the application registers, even later.
//
// # The hook (for the package's modules: plans, retries, hedges, streams, and
// # any other that reports to a trace, such as a circuit breaker)
// - `tracing(option)` → a `Tracing` or `null`. `option` is a call's `otel`
//   option as the caller wrote it: `undefined` means the package-wide one
//   (`traceWith`), `null` turns tracing off for that call, an API module
//   turns it on for that call. `null` back means tracing is off: the caller
//   keeps `null` and tests it (`t !== null`), which is all tracing costs
//   when it is off. Throws a TypeError naming `options.otel` for anything
//   else.
// - `t.start(name, parent, deadlineAt, atMs, attributes?)` → a span:
//   `parent` a span from `start` (its child), or `undefined` (a child of the
//   context active now: the application's span, where a context manager is
//   registered). With `deadlineAt` (a deadline's `at`), the span gets
//   `deadline.remaining_ms` at `atMs`.
//   `atMs` is the package's clock (js/timers.js `now()`), handed to the API
//   as epoch milliseconds (see `Tracing`), so a span lasts exactly what the
//   package's records say, and fake time is span time.
// Every attribute ending in `_ms` with a fraction is rounded to 0.1 ms
// (`rounded`), on spans and events alike.
// - `t.end(span, outcome, atMs, error?, attributes?)`: sets
//   `deadline.outcome` (and `attributes`), the status (ERROR for every
//   outcome not in `FINE`, its message `error`'s: an Error is also recorded
//   as an exception event, a string is the message alone), and ends the span.
// - `t.close(span, atMs, attributes?)`: ends a span that has no outcome of
//   its own (a plan's: its steps have theirs), status left unset.
// - `t.event(span, name, attributes, atMs)`: a span event.
// - `t.within(span, fn, ...args)`: calls `fn(...args)` with `span` as the
//   active span, so spans the application starts inside are its children.
// - `t.mark(name, attributes, atMs)`: something happened that has no span
//   of its own (a breaker opening or closing): an event on the span active
//   now, or, with none active, a span of no duration named `name`.
// For example, a breaker that changes state:
//   const t = tracing(options.otel); // once, where its options are read
//   if (t !== null) t.mark("deadline.breaker", { "deadline.breaker.state": "open" }, now());
// Attribute names are all under `deadline.` (OpenTelemetry has no deadline
// convention); docs/api.md lists each one. A failing tracer is the
// application's problem, not the request's: the hook does not catch what
// the API throws, and the OpenTelemetry API itself never throws.

import { typeError } from "./validate.js";

/**
 * Outcomes that leave the span's status unset, as a success: an answer, a
 * skipped optional step, a stream that closed or that its consumer
 * cancelled, a hedge attempt that lost to another. Every other outcome (a
 * step's, an attempt's, a retry's stop reason, a stream's) is an ERROR.
 */
const FINE = new Set(["ok", "skipped", "closed", "cancelled", "lost"]);

/** The package-wide Tracing (`traceWith`), or null. */
let global = null;
/** One Tracing per API module given per call. */
const perModule = new WeakMap();

/**
 * Times cross as epoch milliseconds: the package's clock plus the distance
 * from the host's `performance.now()` to `Date.now()`, taken once when the
 * Tracing is made. A bare `performance.now()` reading is a TimeInput too, but
 * an SDK tells the two kinds of number apart by their size against its own
 * `performance.now()` (sdk-trace 2.x: a reading later than its own is taken
 * for epoch milliseconds), so a reading from any other timeline (a test's
 * fake clock) would land in 1970.
 */
class Tracing {
  constructor(api, tracer) {
    this.api = api;
    this.tracer = tracer ?? api.trace.getTracer("edge-deadline");
    this.error = api.SpanStatusCode?.ERROR ?? 2;
    this.epoch = Date.now() - performance.now();
  }

  start(name, parent, deadlineAt, atMs, attributes = {}) {
    const { api } = this;
    if (deadlineAt !== undefined) attributes["deadline.remaining_ms"] = deadlineAt > atMs ? deadlineAt - atMs : 0;
    const active = api.context.active();
    return this.tracer.startSpan(name, { attributes: rounded(attributes), startTime: this.epoch + atMs }, parent === undefined ? active : api.trace.setSpan(active, parent));
  }

  end(span, outcome, atMs, error, attributes) {
    const at = this.epoch + atMs;
    if (attributes) span.setAttributes(rounded(attributes));
    span.setAttribute("deadline.outcome", outcome);
    if (!FINE.has(outcome)) {
      const thrown = error instanceof Error;
      if (thrown) span.recordException(error, at);
      span.setStatus({ code: this.error, message: thrown ? error.message : typeof error === "string" ? error : outcome });
    }
    span.end(at);
  }

  close(span, atMs, attributes) {
    if (attributes) span.setAttributes(rounded(attributes));
    span.end(this.epoch + atMs);
  }

  event(span, name, attributes, atMs) {
    span.addEvent(name, rounded(attributes), this.epoch + atMs);
  }

  mark(name, attributes, atMs) {
    const { api } = this;
    attributes = rounded(attributes);
    const at = this.epoch + atMs;
    const span = api.trace.getSpan(api.context.active());
    if (span !== undefined) span.addEvent(name, attributes, at);
    else this.tracer.startSpan(name, { attributes, startTime: at }).end(at);
  }

  within(span, fn, ...args) {
    const { api } = this;
    return api.context.with(api.trace.setSpan(api.context.active(), span), fn, undefined, ...args);
  }
}

/**
 * `attributes` with every duration (a key ending in `_ms`) that has a
 * fraction rounded to 0.1 ms, as the package's messages and plan traces
 * show measured milliseconds: a clock's reading minus another is noise past
 * that. Whole values (limits, fake time) are kept as they are.
 */
function rounded(attributes) {
  for (const key in attributes) {
    const v = attributes[key];
    if (typeof v === "number" && !Number.isInteger(v) && key.endsWith("_ms")) attributes[key] = Math.round(v * 10) / 10;
  }
  return attributes;
}

function checked(param, api, tracer) {
  if (api === null || typeof api !== "object" || typeof api.trace?.setSpan !== "function" || typeof api.context?.active !== "function") {
    throw typeError(param, "the @opentelemetry/api module (import * as api from \"@opentelemetry/api\") or null", api);
  }
  if (tracer !== undefined && (tracer === null || typeof tracer.startSpan !== "function")) {
    throw typeError("options.tracer", "a Tracer (api.trace.getTracer(name))", tracer);
  }
  return new Tracing(api, tracer);
}

/**
 * Turns tracing on for the whole package with `api` (the `@opentelemetry/api`
 * module), or off with `null`. `options.tracer` replaces the package's own
 * `api.trace.getTracer("edge-deadline")`.
 * @param {object | null} api
 * @param {{ tracer?: object }} [options]
 */
export function traceWith(api, options) {
  if (options !== undefined && (options === null || typeof options !== "object")) throw typeError("options", "an object like { tracer }", options);
  global = api === null ? null : checked("api", api, options?.tracer);
}

/** The Tracing for one call (see the module doc), or null when tracing is off. */
export function tracing(option) {
  if (option === undefined) return global;
  if (option === null) return null;
  let t = typeof option === "object" ? perModule.get(option) : undefined;
  if (t === undefined) {
    t = checked("options.otel", option);
    perModule.set(option, t);
  }
  return t;
}
