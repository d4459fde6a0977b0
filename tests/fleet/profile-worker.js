// PROFILE, the upstream of the fleet recipe (docs/recipes.md, "Fleet-derived
// timeouts in one Worker") in the fleet test: answers a profile after 4–12 ms
// (a seeded spread), or, once armed (`/_arm?delayMs=…`), the next call after
// `delayMs`. `/_calls` lists when each call since the arming arrived, so the
// test sees where the recipe cut an attempt and started the next. Once made to
// fail (`/_fail?calls=…&how=status|throw`), the next calls answer 500 with a
// body naming an internal host and a key (`how=status`), or throw
// (`how=throw`): the recipe must answer in its own words, none of these.
import { rng } from "./support.js";

const u = rng(7);
let armedMs = 0;
let calls = [];
let failing = { calls: 0, how: "status" };

/** What a failing upstream says: nothing of it may reach the recipe's client. */
const UPSTREAM_DETAIL = "connect ECONNREFUSED db-primary.internal:5432 (https://profile.internal/me?key=sk-live-4f9a)";

export default {
  async fetch(request) {
    const { pathname, searchParams } = new URL(request.url);
    if (pathname === "/_arm") {
      armedMs = Number(searchParams.get("delayMs"));
      calls = [];
      failing = { calls: 0, how: "status" };
      return new Response(null, { status: 204 });
    }
    if (pathname === "/_fail") {
      failing = { calls: Number(searchParams.get("calls")), how: searchParams.get("how") ?? "status" };
      return new Response(null, { status: 204 });
    }
    if (failing.calls > 0) {
      failing.calls--;
      if (failing.how === "throw") throw new Error(UPSTREAM_DETAIL);
      return Response.json({ error: UPSTREAM_DETAIL }, { status: 500, headers: { "x-upstream-host": "db-primary.internal" } });
    }
    if (pathname === "/_calls") return Response.json(calls);
    const delayMs = armedMs || 4 + 8 * u();
    armedMs = 0;
    calls.push({ at: Date.now(), delayMs });
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return Response.json({ id: 7, name: "Ada" });
  },
};
