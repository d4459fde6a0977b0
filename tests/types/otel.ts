// traceWith and the `otel` option against the real `@opentelemetry/api` types
// (compiled with usage.ts by tests/run.mjs "types"): the module and a Tracer
// from it fit the package's own structural types, so users pass them as they
// are; anything else is refused.
import * as api from "@opentelemetry/api";
import { Deadline, fetchWithDeadline, hedge, plan, retry, traceWith, withStallTimeout } from "edge-deadline";
import type { OpenTelemetryApi, OtelOption } from "edge-deadline";

export async function traced(body: ReadableStream<Uint8Array>) {
  traceWith(api);
  traceWith(api, { tracer: api.trace.getTracer("my-app", "1.0.0") });
  traceWith(null);
  const module: OpenTelemetryApi = api;
  const option: OtelOption = { otel: api };
  // @ts-expect-error: a Tracer alone is not the module (it cannot make a span's context)
  traceWith(api.trace.getTracer("my-app"));
  // @ts-expect-error: a tracer must be able to start spans
  traceWith(api, { tracer: {} });

  const deadline = Deadline.in(1_000);
  const p = plan(deadline, [{ name: "a", minMs: 1, kind: "mandatory" }], { otel: api });
  await p.run("a", () => 1);
  p.end();
  await retry(async () => 1, { deadline, otel: api });
  await retry(async () => 1, { deadline, otel: null });
  await hedge(async () => 1, { deadline, delayMs: 10, otel: api });
  withStallTimeout(body, { firstChunkMs: 1, stallMs: 1, otel: api });
  await fetchWithDeadline("https://example.com", {}, { deadline, otel: api });
  // @ts-expect-error: otel is the API module or null
  await retry(async () => 1, { deadline, otel: "on" });
  return [module, option];
}
