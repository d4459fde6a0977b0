// The entry module of the quota Worker (see src/lib.rs).
import { initSync, many, turns } from "./worker.js";
import module from "./worker_bg.wasm";

initSync({ module });

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get("n") ?? 20_000);
    try {
      const answer = url.pathname === "/turns" ? await turns(n) : await many(n);
      return new Response(answer, { headers: { "content-type": "application/json" } });
    } catch (e) {
      return new Response(JSON.stringify({ error: `${e?.name}: ${e?.message}` }), { status: 500 });
    }
  },
};
