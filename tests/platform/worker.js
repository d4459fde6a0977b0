// Two Workers for tests/platform/run.mjs: the same module serves as the
// "caller" (the one the test's HTTP requests reach) and the "callee" (bound to
// it as a service binding, CALLEE, and as a JS RPC target, RPC, the `Callee`
// WorkerEntrypoint). The caller keeps what it saw in a module-level log that
// GET /log returns (one isolate per service holds it across requests).
import { WorkerEntrypoint } from "cloudflare:workers";
import { afterResponse, Deadline, isDeadlineExceeded, toHeaders } from "../../pkg/workerd.js";

const log = [];
const note = (entry) => log.push({ ...entry, at: performance.now() });

/** The callee's RPC methods: a deadline arrives as `d.toWire()`, and is read back with `Deadline.fromWire`. */
export class Callee extends WorkerEntrypoint {
  /** What the callee's deadline says, right after it arrived. */
  async remaining(wire) {
    const d = Deadline.fromWire(wire, { maxMs: 10_000 });
    const out = { remaining: d.remaining(), limit: d.limit, expired: d.expired() };
    d.dispose();
    return out;
  }

  /** Work bounded by the caller's deadline: waits for its signal, and says how it ended. */
  async waitForTheDeadline(wire) {
    const started = performance.now();
    const d = Deadline.fromWire(wire, { maxMs: 10_000 });
    const reason = await new Promise((resolve) => d.signal().addEventListener("abort", () => resolve(d.signal().reason), { once: true }));
    return { afterMs: performance.now() - started, branded: isDeadlineExceeded(reason), limit: reason.limit ?? "budget" };
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case "/log":
        return Response.json(log.splice(0));

      // The client leaves mid-stream: with enable_request_signal, the deadline's signal aborts with the
      // client's reason and its limit says "client"; without it, the signal stays quiet.
      case "/client-left": {
        const d = Deadline.forRequest(request, ctx, { budgetMs: 10_000 });
        const signal = d.signal();
        signal.addEventListener("abort", () => note({ event: "aborted", limit: d.limit, reason: signal.reason?.name, message: String(signal.reason?.message) }));
        const { readable, writable } = new TransformStream();
        const writer = writable.getWriter();
        ctx.waitUntil(
          (async () => {
            for (let i = 0; i < 60 && !signal.aborted; i++) {
              try {
                await writer.write(new TextEncoder().encode(`tick ${i}\n`));
              } catch {
                note({ event: "write failed", aborted: signal.aborted, limit: d.limit });
                return;
              }
              await new Promise((r) => setTimeout(r, 50));
            }
            note({ event: "loop ended", aborted: signal.aborted, limit: d.limit });
            d.dispose();
          })(),
        );
        return new Response(readable, { headers: { "content-type": "text/plain" } });
      }

      // A fetch through a service binding carries the propagation headers: the callee reads what is left.
      case "/binding": {
        const d = Deadline.forRequest(request, ctx, { budgetMs: 3_000 });
        const res = await env.CALLEE.fetch("http://callee/remaining", { headers: toHeaders(d) });
        return Response.json({ caller: { remaining: d.remaining(), limit: d.limit }, callee: await res.json() });
      }
      // (the callee's side of /binding)
      case "/remaining": {
        const d = Deadline.forRequest(request, ctx, { budgetMs: 10_000 });
        return Response.json({ remaining: d.remaining(), limit: d.limit });
      }

      // JS RPC: the deadline crosses as d.toWire(), and the callee's work ends with it.
      case "/rpc": {
        const d = Deadline.forRequest(request, ctx, { budgetMs: Number(url.searchParams.get("budget") ?? 800), fallbackReserveMs: 100 });
        const wire = d.toWire();
        const seen = await env.RPC.remaining(wire);
        const waited = await env.RPC.waitForTheDeadline(d.toWire());
        let refused;
        try {
          await env.RPC.remaining({ ...wire, limit: "soon" });
        } catch (error) {
          refused = { name: error.name, message: error.message };
        }
        const spent = await env.RPC.remaining({ ...wire, remainingMs: 0 });
        return Response.json({ wire, seen, waited, refused, spent });
      }

      // Work after the response, under the background deadline (a short custom cap, so the test is quick).
      case "/background": {
        const sentAt = performance.now();
        return afterResponse(
          ctx,
          new Response("answered"),
          async (d) => {
            note({ event: "background started", remaining: d.remaining(), limit: d.limit, sinceHandler: performance.now() - sentAt });
            const reason = await new Promise((resolve) => d.signal().addEventListener("abort", () => resolve(d.signal().reason), { once: true }));
            note({ event: "background cut", branded: isDeadlineExceeded(reason), limit: reason.limit, afterMs: performance.now() - sentAt });
            throw reason;
          },
          { platform: "custom", caps: { wallMs: 400 }, marginMs: 100 },
        );
      }
    }
    return new Response("not found", { status: 404 });
  },
};
