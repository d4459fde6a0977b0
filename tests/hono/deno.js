// Deno runner for the Hono checks: the real `hono` from node_modules (no
// registry at test time), the package's `deno` entries (deno.js, hono-deno.js). Prints one
// JSON report line.
import { Hono } from "../../node_modules/hono/dist/index.js";
import * as lib from "../../pkg/deno.js";
import { deadline } from "../../pkg/hono-deno.js";
import { runHonoChecks } from "./checks.js";

await lib.init();
const report = await runHonoChecks(`hono in deno ${Deno.version.deno}`, { Hono, lib, deadline });
console.log(JSON.stringify(report));
