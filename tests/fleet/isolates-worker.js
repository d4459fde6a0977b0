// The isolates' Worker in the fleet test: simulated isolates record into
// sketches and flush through the Durable Object binding TIMEOUTS (RPC, with
// aggregatorBinding, as the recipe does: no token); /table and /raw reach the
// aggregator the same way, /counted/… and /flaky/… the instrumented classes,
// /recipe the fleet recipe's Worker and /profile/… its upstream.
import { aggregatorBinding } from "../../pkg/durable-workerd.js";
import { LatencySketch } from "../../pkg/derive-workerd.js";
import { benchFlush, exact, simulate } from "./support.js";

const stubOf = (ns, name) => () => ns.get(ns.idFromName(name));

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const agg = aggregatorBinding(stubOf(env.TIMEOUTS, "timeouts"));
    const counted = aggregatorBinding(stubOf(env.COUNTED, "counted"));
    const flaky = aggregatorBinding(stubOf(env.FLAKY, "flaky"));
    if (url.pathname === "/simulate") {
      const isolates = Number(url.searchParams.get("isolates"));
      const requests = Number(url.searchParams.get("requests"));
      const post = async (bytes) => (await agg.fetch(new Request("http://agg/flush", { method: "POST", body: bytes, headers: { "content-type": "application/octet-stream" } }))).status;
      const { all, errors, statuses } = await simulate({ LatencySketch, isolates, requests, post });
      const expected = Object.fromEntries(Object.entries(all).map(([k, xs]) => [k, { n: xs.length, errors: errors[k], p99: exact(xs, 0.99), p50: exact(xs, 0.5) }]));
      return Response.json({ expected, statuses });
    }
    // bench/fleet-workerd.mjs: `n` flushes of 20 buckets, `c` at a time, through the service binding
    // to the aggregator (or, with `to=echo`, to the aggregator's Worker, which reads them and answers 204
    // without reaching the object: the cost of the sender and the hop alone).
    if (url.pathname === "/load") {
      const echo = url.searchParams.get("to") === "echo";
      const n = Number(url.searchParams.get("n"));
      const c = Number(url.searchParams.get("c"));
      const bytes = benchFlush(LatencySketch, 20, Number(url.searchParams.get("samples") ?? 100));
      let next = 0;
      let failed = 0;
      const t0 = Date.now();
      const worker = async () => {
        while (next < n) {
          next++;
          const r = echo ? await env.AGG.fetch("http://agg/echo", { method: "POST", body: bytes }) : await agg.fetch(new Request("http://agg/flush", { method: "POST", body: bytes }));
          if (r.status !== 204) failed++;
        }
      };
      await Promise.all(Array.from({ length: c }, worker));
      return Response.json({ n, c, bytes: bytes.byteLength, failed, ms: Date.now() - t0 });
    }
    // The group-commit check: `n` flushes of 20 buckets sent at once to the counting aggregator.
    if (url.pathname === "/burst") {
      const bytes = benchFlush(LatencySketch, 20, 100);
      const post = async () => (await counted.fetch(new Request("http://agg/flush", { method: "POST", body: bytes }))).status;
      const statuses = await Promise.all(Array.from({ length: Number(url.searchParams.get("n")) }, post));
      return Response.json({ statuses });
    }
    // The fleet recipe's Worker (docs/recipes.md, as printed) and its upstream's controls.
    if (url.pathname === "/recipe") return env.RECIPE.fetch(request);
    if (url.pathname.startsWith("/profile/")) return env.PROFILE.fetch(`http://profile${url.pathname.slice("/profile".length)}${url.search}`);
    if (url.pathname === "/counted/writes") return Response.json(await stubOf(env.COUNTED, "counted")().counts());
    if (url.pathname === "/counted/table") return counted.fetch(new Request("http://agg/table"));
    if (url.pathname === "/counted/flush") return counted.fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    // The failed-write check: arm the flaky object's next sync() to fail, then flush and read as usual.
    if (url.pathname === "/flaky/arm") {
      await stubOf(env.FLAKY, "flaky")().armSync();
      return new Response(null, { status: 204 });
    }
    // The lock-out check: an object of its own ("full"), reached like the others.
    if (url.pathname === "/full/flush") return aggregatorBinding(stubOf(env.TIMEOUTS, "full")).fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    if (url.pathname === "/full/table") return aggregatorBinding(stubOf(env.TIMEOUTS, "full")).fetch(new Request("http://agg/table"));
    if (url.pathname === "/small/flush") return aggregatorBinding(stubOf(env.SMALL, "small")).fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    if (url.pathname === "/small/table") return aggregatorBinding(stubOf(env.SMALL, "small")).fetch(new Request("http://agg/table"));
    // The damaged-window check: an object of its own ("damaged") of the instrumented class, whose
    // storage the test damages (RPC) before a restart, then lists.
    const damaged = stubOf(env.FLAKY, "damaged");
    if (url.pathname === "/damaged/flush") return aggregatorBinding(damaged).fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    if (url.pathname === "/damaged/table") return aggregatorBinding(damaged).fetch(new Request("http://agg/table"));
    if (url.pathname === "/damaged/damage") return Response.json(await damaged().damageWindow());
    if (url.pathname === "/damaged/plant") return Response.json(await damaged().plantOldWindow(Number(url.searchParams.get("hoursAgo"))));
    if (url.pathname === "/damaged/keys") return Response.json(await damaged().keys(url.searchParams.get("prefix")));
    if (url.pathname === "/flaky/table") return flaky.fetch(new Request("http://agg/table"));
    if (url.pathname === "/flaky/flush") return flaky.fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    if (url.pathname === "/table") return agg.fetch(new Request("http://agg/table"));
    if (url.pathname === "/raw") return agg.fetch(new Request("http://agg/flush", { method: "POST", body: await request.arrayBuffer() }));
    return new Response("not found", { status: 404 });
  },
};
