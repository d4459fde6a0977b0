// PROFILE, the upstream of the fleet recipe (docs/recipes.md, "Fleet-derived
// timeouts in one Worker") in the fleet test: answers a profile after 4–12 ms
// (a seeded spread), or, once armed (`/_arm?delayMs=…`), the next call after
// `delayMs`. `/_calls` lists when each call since the arming arrived, so the
// test sees where the recipe cut an attempt and started the next.
import { rng } from "./support.js";

const u = rng(7);
let armedMs = 0;
let calls = [];

export default {
  async fetch(request) {
    const { pathname, searchParams } = new URL(request.url);
    if (pathname === "/_arm") {
      armedMs = Number(searchParams.get("delayMs"));
      calls = [];
      return new Response(null, { status: 204 });
    }
    if (pathname === "/_calls") return Response.json(calls);
    const delayMs = armedMs || 4 + 8 * u();
    armedMs = 0;
    calls.push({ at: Date.now(), delayMs });
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return Response.json({ id: 7, name: "Ada" });
  },
};
