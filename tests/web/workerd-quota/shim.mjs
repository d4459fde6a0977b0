// The entry module of the quota Worker (see src/lib.rs).
import { initSync, many } from "./worker.js";
import module from "./worker_bg.wasm";

initSync({ module });

export default {
  async fetch(request) {
    const n = Number(new URL(request.url).searchParams.get("n") ?? 20_000);
    try {
      return new Response(await many(n), { headers: { "content-type": "application/json" } });
    } catch (e) {
      return new Response(JSON.stringify({ error: `${e?.name}: ${e?.message}` }), { status: 500 });
    }
  },
};
