// workerd runner: the suite runs inside a request handler (workerd forbids
// timers at module scope). GET / answers with the JSON report.
import * as lib from "../../pkg/workerd.js";
import { prepare, runSuite } from "./harness.js";

export default {
  async fetch() {
    const ctx = { runtime: "workerd", ...(await prepare(lib)) };
    return Response.json(await runSuite(lib, ctx));
  },
};
