// The packaging tests (the `package` suite of tests/run.mjs): packs pkg/ as
// it is (build it first: `node scripts/build.mjs`), then checks the tarball
// and installs it, offline, into fresh temp projects, one per user path:
// a Worker under wrangler, a Hono app under wrangler, a Deno server, two browser pages in Chromium, Node,
// a Vite project (dev server and build), a Next.js app on the edge runtime, and the examples of docs/api.md. Prints the usual JSON report last.
//
//   node tests/package/run.mjs [config|tarball|worker|hono|deno|browser|node|docs|vite|next …]
//   KEEP_PACKAGE_TMP=1 keeps the temp projects for a look afterwards.
import { startUpstream } from "../../examples/upstream.mjs";
import { pack } from "../../scripts/pack.mjs";
import { checkBrowser } from "./browser.mjs";
import { checkConfig } from "./config.mjs";
import { checkDeno } from "./deno.mjs";
import { checkDocs } from "./docs.mjs";
import { checkHono } from "./hono.mjs";
import { group, killAll, root, tempDir, within } from "./lib.mjs";
import { join } from "node:path";
import { checkNext } from "./next.mjs";
import { checkNode } from "./node.mjs";
import { checkTarball } from "./tarball.mjs";
import { checkVite } from "./vite.mjs";
import { checkWorker } from "./worker.mjs";

const GROUP_TIMEOUT_MS = 120_000;
const only = process.argv.slice(2);
const report = { runtime: "package (npm pack → install)", passed: 0, failed: 0, skipped: 0, failures: [], facts: [], notes: [] };
const t0 = performance.now();

const packed = pack({ outDir: tempDir("pack") });
const upstream = await startUpstream();

const groups = {
  config: (g) => checkConfig(g, join(root, "pkg")),
  tarball: (g) => checkTarball(g, packed),
  worker: (g) => checkWorker(g, packed, upstream),
  deno: (g) => checkDeno(g, packed, upstream),
  browser: (g) => checkBrowser(g, packed, upstream),
  node: (g) => checkNode(g, packed),
  docs: (g) => checkDocs(g, packed),
  hono: (g) => checkHono(g, packed),
  vite: (g) => checkVite(g, packed),
  next: (g) => checkNext(g, packed),
};

async function runGroup(name) {
  if (only.length && !only.includes(name)) return;
  const g = group(name, report);
  try {
    await within(GROUP_TIMEOUT_MS, name, groups[name](g));
  } catch (error) {
    report.failed++;
    report.failures.push({ name: `${name} (group)`, error: String(error?.stack ?? error) });
    console.log(`  ✗ ${name}: ${error?.message ?? error}`);
  }
}

// Two lanes (two cores here): the long waits of the Deno server's real limits
// overlap with wrangler's and Chromium's start-up.
await Promise.all([
  (async () => {
    for (const name of ["config", "tarball", "worker", "hono", "node", "vite"]) await runGroup(name);
  })(),
  (async () => {
    for (const name of ["deno", "browser", "docs", "next"]) await runGroup(name);
  })(),
]);

killAll();
await upstream.close();
report.note = [...report.notes, `${Math.round((performance.now() - t0) / 1000)} s`].join("; ");
console.log(JSON.stringify(report));
process.exit(report.failed ? 1 : 0);
