// workerd runner: the suite runs inside a request handler (workerd forbids
// timers at module scope). GET / answers with the JSON report. The cases that
// need requests of their own (tests/js/requests.js) send them to this same
// worker, through its socket: POST /request/<name> with JSON parameters.
import wasmModule from "../../pkg/edge_deadline_bg.wasm";
import * as main from "../../pkg/workerd.js";
import * as derive from "../../pkg/derive-workerd.js";
import { combine, prepare, runSuite } from "./harness.js";
import { scenarios } from "./requests.js";

const lib = combine(main, derive);

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/request/")) {
      await lib.init();
      return Response.json(await scenarios[url.pathname.slice("/request/".length)](lib, await request.json()));
    }
    const fixtureUrl = url.searchParams.get("fixture") ?? undefined;
    const self = `${url.origin}/request/`;
    const requestSelf = async (name, params) => {
      const res = await fetch(self + name, { method: "POST", body: JSON.stringify(params) });
      if (!res.ok) throw new Error(`request ${name} answered ${res.status}: ${await res.text()}`);
      return res.json();
    };
    const quirks = (url.searchParams.get("quirks") ?? "").split(",").filter(Boolean);
    // wasmModule: the compiled main core, for a case that loads a second copy of the
    // package (Workers cannot compile bytes at run time).
    const ctx = { runtime: "workerd", fixtureUrl, request: requestSelf, quirks, wasmModule, ...(await prepare(lib)) };
    return Response.json(await runSuite(lib, ctx));
  },
};
