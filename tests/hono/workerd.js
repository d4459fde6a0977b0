// workerd runner for the Hono checks, bundled with esbuild (hono + this file)
// by tests/hono/run.mjs; the package's Workers entry imports the .wasm as a
// module. GET / answers with the JSON report. Timers are only allowed inside a
// request, so everything runs in the handler.
import { Hono } from "hono";
import * as lib from "../../pkg/workerd.js";
import { deadline } from "../../pkg/hono.js";
import { runHonoChecks } from "./checks.js";

export default {
  async fetch() {
    await lib.init();
    return Response.json(await runHonoChecks("hono in workerd", { Hono, lib, deadline }));
  },
};
