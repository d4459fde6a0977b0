// Deadlines in a real Deno.serve (run by Deno; tests/run.mjs `servers`). Prints one JSON report line.
import { Deadline } from "../../pkg/deno.js";
import { clientGone, serverReport } from "./client-gone.js";

const ok = await serverReport(`servers (deno ${Deno.version.deno})`, {
  "a client that leaves mid-stream: the request's deadline aborts with limit client (request.signal)": async () => {
    const { afterMs } = await clientGone({ Deadline }, (handler) => {
      const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, handler);
      return { url: `http://127.0.0.1:${server.addr.port}/`, close: () => server.shutdown() };
    }, 2_000);
    return { clientGoneMs: afterMs };
  },
});
Deno.exit(ok ? 0 : 1);
