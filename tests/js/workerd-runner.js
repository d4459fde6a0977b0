// workerd runner: the suite runs inside a request handler (workerd forbids
// timers at module scope). GET / answers with the JSON report.
import * as lib from "../../pkg/workerd.js";
import { prepare, runSuite } from "./harness.js";

export default {
  async fetch(request) {
    const fixtureUrl = new URL(request.url).searchParams.get("fixture") ?? undefined;
    const ctx = { runtime: "workerd", fixtureUrl, ...(await prepare(lib)) };
    return Response.json(await runSuite(lib, ctx));
  },
};
