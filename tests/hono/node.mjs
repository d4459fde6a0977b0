// Node (and Bun) runner for the Hono checks: prints one JSON report line.
import { Hono } from "hono";
import * as lib from "../../pkg/node.js";
import { deadline } from "../../pkg/hono-node.js";
import { runHonoChecks } from "./checks.js";

await lib.init();
const keepAlive = setInterval(() => {}, 60_000); // the package's timers never hold the process
const runtime = globalThis.Bun ? `bun ${globalThis.Bun.version}` : `node ${process.version}`;
const report = await runHonoChecks(`hono in ${runtime}`, { Hono, lib, deadline });
clearInterval(keepAlive);
console.log(JSON.stringify(report));
