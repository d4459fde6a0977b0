// The real OpenTelemetry packages for the otel cases (tests/js/cases/otel.js),
// loaded by the runners of runtimes that have node_modules (Node and Deno):
// `@opentelemetry/api` and `@opentelemetry/sdk-trace-base` with its
// InMemorySpanExporter behind a SimpleSpanProcessor, registered once as the
// global provider (what `getTracer("edge-deadline")` follows), and a context
// manager on AsyncLocalStorage (both runtimes have `node:async_hooks`), so
// the cases can check the nesting the application sees: its own span around
// a plan, and its spans inside a step. The package itself imports none of this.
import { AsyncLocalStorage } from "node:async_hooks";
import * as api from "@opentelemetry/api";
import * as sdk from "@opentelemetry/sdk-trace-base";

/** A context manager on AsyncLocalStorage: the API's ContextManager interface, nothing more. */
class StorageContextManager {
  #storage = new AsyncLocalStorage();
  active() {
    return this.#storage.getStore() ?? api.ROOT_CONTEXT;
  }
  with(context, fn, thisArg, ...args) {
    return this.#storage.run(context, () => fn.call(thisArg, ...args));
  }
  bind(context, target) {
    return typeof target === "function" ? (...args) => this.with(context, target, undefined, ...args) : target;
  }
  enable() {
    return this;
  }
  disable() {
    this.#storage.disable();
    return this;
  }
}

/** Spans started and not yet ended (the exporter sees only ended ones): `open()` names them. */
class OpenSpans {
  spans = new Set();
  onStart(span) {
    this.spans.add(span);
  }
  onEnd(span) {
    this.spans.delete(span);
  }
  forceFlush() {
    return Promise.resolve();
  }
  shutdown() {
    return Promise.resolve();
  }
}

export function loadOtel() {
  const exporter = new sdk.InMemorySpanExporter();
  const open = new OpenSpans();
  const provider = new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter), open] });
  if (!api.trace.setGlobalTracerProvider(provider)) throw new Error("a global tracer provider was registered already");
  if (!api.context.setGlobalContextManager(new StorageContextManager().enable())) throw new Error("a global context manager was registered already");
  return { api, sdk, exporter, provider, open: () => [...open.spans].map((s) => s.name), forgetOpen: () => open.spans.clear() };
}
