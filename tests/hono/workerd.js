// workerd runner for the Hono checks, bundled with esbuild (hono + this file)
// by tests/hono/run.mjs; the package's Workers entry imports the .wasm as a
// module. GET / answers with the JSON report of the in-process checks;
// /app/… is an app served over real HTTP by workerd (init at module scope,
// as users write it; timers only inside requests).
import { Hono } from "hono";
import * as lib from "../../pkg/workerd.js";
import { deadline } from "../../pkg/hono-workerd.js";
import { runHonoChecks } from "./checks.js";

await lib.init();

const app = new Hono().basePath("/app");
app.use(deadline({ budgetMs: 5_000, serverTiming: true }));
app.get("/stream", (c) => {
  const d = c.get("deadline");
  let n = 0;
  const body = new ReadableStream({
    async pull(ctl) {
      await new Promise((r) => setTimeout(r, 5));
      if (++n > 3) return ctl.close();
      ctl.enqueue(new TextEncoder().encode(`data: ${n} ${lib.currentDeadline() === d}\n\n`));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
});

export default {
  async fetch(request) {
    if (new URL(request.url).pathname.startsWith("/app/")) return app.fetch(request);
    return Response.json(await runHonoChecks("hono in workerd", { Hono, lib, deadline }));
  },
};
