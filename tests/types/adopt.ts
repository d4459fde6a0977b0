// Types of the helpers that fit where users already are: the Hono middleware,
// the ambient deadline, Server-Timing. Compiled with the real `hono` types.
import { Hono } from "hono";
import { Deadline, ambientDeadline, currentDeadline, fetchWithDeadline, plan, relay, runWithDeadline, toHeaders } from "edge-deadline";
import { deadline } from "edge-deadline/hono";

const app = new Hono();
app.use(deadline({ budgetMs: 8_000, platform: "cloudflare-workers", fallbackReserveMs: 300, serverTiming: true }));
app.use(deadline({ caps: { wallMs: 1_000 } }));
// @ts-expect-error not a platform
deadline({ budgetMs: 1, platform: "aws" });
// @ts-expect-error budgetMs is a number
deadline({ budgetMs: "8s" });

const typed = new Hono().use(deadline({ budgetMs: 100 }));
typed.get("/", (c) => {
  const d: Deadline = c.get("deadline");
  const p = plan(d, [{ name: "a", kind: "mandatory", minMs: 1 }]);
  const header: string = p.serverTiming();
  c.set("plan", p);
  return c.text(`${d.remaining()} ${header}`);
});

// A plain `new Hono()` (no generics, routes not chained on `use`): the middleware's variables are
// typed through Hono's ContextVariableMap, as in the README.
const plain = new Hono();
plain.use(deadline({ budgetMs: 100 }));
plain.get("/", (c) => {
  const d: Deadline = c.get("deadline");
  // @ts-expect-error a Deadline, not any/unknown
  const wrong: string = c.get("deadline");
  c.set("plan", plan(d, [{ name: "a", kind: "mandatory", minMs: 1 }]));
  return c.text(`${d.remaining()} ${wrong}`);
});

export async function ambient(d: Deadline) {
  const mode: "async" | "sync" = ambientDeadline;
  const n: number = await runWithDeadline(d, async () => (currentDeadline()?.remaining() ?? 0) + mode.length);
  // @ts-expect-error fn is required
  runWithDeadline(d);
  return n;
}

export async function relayed(d: Deadline, request: Request): Promise<Response> {
  const a: Response = await relay(fetch("https://example.com"), { deadline: d, stallMs: 1_000 });
  // @ts-expect-error stallMs is a number
  await relay(a, { stallMs: "1s" });
  return relay((signal) => fetch("https://example.com", { headers: toHeaders(d), signal }), { deadline: d, signal: request.signal, fallback: (reason, ms) => new Response(String(ms)) });
}

export async function propagated(d: Deadline) {
  await fetchWithDeadline("https://example.com", undefined, { deadline: d });
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: ["grpc-timeout", "edge-deadline-remaining-ms"] });
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: false });
  // @ts-expect-error propagate is a boolean or header names
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: 1 });
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: "grpc-timeout" });
  // @ts-expect-error propagate names headers of deadlineHeaders, not any string
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: "x-request-timeout" });
  // @ts-expect-error nor any string in a list
  await fetchWithDeadline("https://example.com", undefined, { deadline: d, propagate: ["grpc-timeout", "x-deadline"] });
}
