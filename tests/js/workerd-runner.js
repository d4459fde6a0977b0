// workerd runner: the suite runs inside a request handler (workerd forbids
// timers at module scope). GET / answers with the JSON report.
import * as lib from "../../pkg/workerd.js";
import { prepare, runSuite } from "./harness.js";

export default {
  async fetch(request) {
    const query = new URL(request.url).searchParams;
    const fixtureUrl = query.get("fixture") ?? undefined;
    // Before the 2026-04-21 compatibility date workerd rejects a fetch (and
    // errors its body) with an unbranded copy of the abort reason.
    const lossyAbortReasons = (query.get("compat") ?? "9999") < "2026-04-21" || undefined;
    const ctx = { runtime: "workerd", fixtureUrl, lossyAbortReasons, ...(await prepare(lib)) };
    return Response.json(await runSuite(lib, ctx));
  },
};
