// Types for js/otel.js. The package does not depend on `@opentelemetry/api`:
// these are the few members it uses, written so the real module (and a
// Tracer of any SDK) fits them.

/** What the package uses of the `@opentelemetry/api` module: pass the module itself (`import * as api from "@opentelemetry/api"`). */
export interface OpenTelemetryApi {
  trace: {
    getTracer(name: string, version?: string): OpenTelemetryTracer;
    setSpan(context: any, span: any): any;
    getSpan(context: any): any;
  };
  context: {
    active(): any;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: any, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F>;
  };
  SpanStatusCode?: { ERROR: number };
}

/** A Tracer (`api.trace.getTracer(name)`): the package only starts spans with it. */
export interface OpenTelemetryTracer {
  startSpan(name: string, options?: any, context?: any): any;
}

export interface TraceWithOptions {
  /** The Tracer to start spans with. @default `api.trace.getTracer("edge-deadline")` */
  tracer?: OpenTelemetryTracer;
}

/**
 * Traces every plan, retry, hedge and guarded stream of the package with `api` (the
 * `@opentelemetry/api` module), or stops with `null`. Spans are children of the context active
 * when the plan, retry, hedge or stream starts; attributes are under `deadline.` (docs/api.md).
 * A call's `otel` option wins over this: an API module traces that call, `null` does not.
 * @throws {TypeError} `api` is neither the API module nor `null`; `options.tracer` is not a Tracer
 */
export function traceWith(api: OpenTelemetryApi | null, options?: TraceWithOptions): void;

/** The `otel` option of `plan`, `retry`, `hedge`, `withStallTimeout`, `fetchWithDeadline` and `relay`. */
export interface OtelOption {
  /**
   * Trace this call with this `@opentelemetry/api` module, or not at all with `null`.
   * @default the module given to `traceWith`, or none
   */
  otel?: OpenTelemetryApi | null;
}
