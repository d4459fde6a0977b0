// Node runner for the Hono checks: prints one JSON report line.
import { Hono } from "hono";
import * as lib from "../../pkg/node.js";
import { deadline } from "../../pkg/hono-node.js";
import { runHonoChecks } from "./checks.js";

await lib.init();
const keepAlive = setInterval(() => {}, 60_000); // the package's timers never hold the process
const report = await runHonoChecks(`hono in node ${process.version}`, { Hono, lib, deadline });
clearInterval(keepAlive);
console.log(JSON.stringify(report));
