// The user documents cannot drift from the package: the README's quick start
// runs exactly as printed against the installed tarball; its API table names
// exactly the exports of every entry point; every relative link of the user
// documents resolves (the packaged README's inside the installed package);
// and no user document speaks of the project's history.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { codeBlocks, jsBlockUnder, links } from "../support/markdown.mjs";
import { bin, root, runOk } from "./lib.mjs";

/** The documents written for users (CONTRIBUTING.md too: it is read by the same people). */
export function userDocuments() {
  const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
  const examples = readdirSync(join(root, "examples"), { recursive: true })
    .filter((f) => /\.md$/.test(f) && !f.includes("node_modules"))
    .map((f) => `examples/${f}`);
  return ["README.md", "CONTRIBUTING.md", "js/README.md", ...docs, ...examples];
}

/** Words about how the project came to be, which mean nothing to a user. */
export const HISTORY_WORDS = [/\bissues?\b/i, /\bseed\s*#?\d{2,}/i, /\bseed'?s\b/i, /\bseeds\//i];

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens. */
export function anchor(heading) {
  return heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

/** The anchors of a document's headings; a repeated one gets `-1`, `-2`… as on GitHub (`plan`, `plan-1`). */
function anchorsOf(file) {
  const text = readFileSync(file, "utf8").replace(/^```[\s\S]*?^```\s*$/gm, "");
  const seen = new Map();
  const out = new Set();
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const a = anchor(m[1].trim());
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n === 0 ? a : `${a}-${n}`);
  }
  return out;
}

/** The relative links of `file` that do not resolve under `base` (a file, a folder, or a heading in a .md). */
export function brokenLinks(file, base) {
  const broken = [];
  for (const target of links(readFileSync(file, "utf8"))) {
    if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, hash] = target.split("#");
    const resolved = path === "" ? file : join(dirname(file), path);
    if (!resolved.startsWith(base) || !existsSync(resolved)) {
      broken.push(`${target} (${relative(base, resolved)} does not exist here)`);
    } else if (hash && resolved.endsWith(".md") && !anchorsOf(resolved).has(hash)) {
      broken.push(`${target} (no heading "#${hash}" in ${relative(base, resolved)})`);
    }
  }
  return broken;
}

/** `[{ names, from }]`: the rows of the table under the README's `## API` heading. */
export function apiTable(readme) {
  const start = readme.indexOf("\n## API\n");
  assert.ok(start >= 0, "README.md has an `## API` section");
  const section = readme.slice(start + 1).split(/\n## /)[0];
  const rows = section
    .split("\n")
    .filter((l) => l.startsWith("|"))
    .slice(2); // the header and its separator
  return rows.map((row) => {
    const [names, from] = row.split(" | ").map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    return { names, from: from[0] };
  });
}

export async function checkReadme(g, dir) {
  const readme = readFileSync(join(root, "README.md"), "utf8");

  await g.check("README: it opens with the two commands for a fresh machine", () => {
    const first = codeBlocks(readme)[0];
    assert.equal(first.lang, "sh");
    assert.deepEqual(first.code.trim().split("\n").map((l) => l.split("#")[0].trim()), ["./dev demo", "./dev test"]);
    assert.ok(readme.indexOf("```sh") < readme.indexOf("\n## "), "before any section");
  });

  // The commands the README gives, in the project the tests installed the tarball into.
  for (const [runtime, cmd, args] of [
    ["Node", bin.node, ["quickstart.mjs"]],
    ["Deno", bin.deno, ["run", "quickstart.mjs"]], // no --allow-read: the Deno entry imports its .wasm
  ]) {
    await g.check(`README: the quick start runs as printed against the installed package (${runtime})`, async () => {
      assert.match(readme, new RegExp(`\`${[cmd === bin.node ? "node" : "deno", ...args].join(" ")}\``), "the README gives this command");
      writeFileSync(join(dir, "quickstart.mjs"), jsBlockUnder(readme, "Quick start"));
      const { stdout } = await runOk(cmd, args, { cwd: dir, timeoutMs: 20_000, env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
      // The printed result: the slow call was cut, the fallback answered inside the 200 ms reserve.
      const m = /^a fallback answer for ada, (\d+) ms to spare$/.exec(stdout.trim());
      assert.ok(m, `printed ${JSON.stringify(stdout)}`);
      const spare = Number(m[1]);
      assert.ok(spare > 0 && spare <= 200, `${spare} ms to spare: the fallback ran inside the reserve`);
      assert.match(readme, /It prints `a fallback answer for ada, 200 ms to spare`/, "the README says what it prints");
    });
  }

  await g.check("README: the Hono example runs as printed (Node, the real hono, a local SSE upstream)", async () => {
    writeFileSync(join(dir, "hono-app.mjs"), jsBlockUnder(readme, "With Hono"));
    // Hono's app.request(path, init, env) hands `env` to the handler as c.env, as a Worker does.
    const script = `import app from "./hono-app.mjs";
import { startUpstream } from ${JSON.stringify(pathToFileURL(join(root, "examples/upstream.mjs")).href)};
const up = await startUpstream();
const read = async (path) => {
  const res = await app.request("/chat", {}, { LLM_URL: up.url + path });
  return { status: res.status, timing: res.headers.get("server-timing"), text: await res.text() };
};
const whole = await read("/events?n=3&id=whole");
const stalled = await read("/mid?id=stalled");
const sent = up.requests.get("whole").remainingMs;
await up.close();
console.log(JSON.stringify({ whole, stalled, sent }));`;
    writeFileSync(join(dir, "hono-run.mjs"), script);
    const { stdout } = await runOk(bin.node, ["hono-run.mjs"], { cwd: dir, timeoutMs: 30_000 });
    const { whole, stalled, sent } = JSON.parse(stdout.trim().split("\n").pop());
    assert.equal(whole.status, 200);
    assert.equal(whole.text, "data: event 1\n\ndata: event 2\n\ndata: event 3\n\n");
    assert.match(whole.timing ?? "", /^edge-deadline;dur=[\d.]+;desc="budget \d+ ms from /, "Server-Timing");
    assert.ok(sent > 0 && sent <= 8_000 - 300, `the upstream was told ${sent} ms`);
    assert.match(stalled.text, /data: event 3\n\n(: ping\n\n)*event: error\ndata: \{"fallback":true,"code":"STREAM_STALLED","reason":"upstream stalled \(stall\): /);
  });

  await g.check("README: the API table names every export of every entry point, and nothing else", async () => {
    const manifest = JSON.parse(readFileSync(join(dir, "node_modules/edge-deadline/package.json"), "utf8"));
    const entries = Object.keys(manifest.exports).filter((k) => !/\.(json|wasm)$/.test(k));
    const list = `const out = {}; for (const e of ${JSON.stringify(entries)}) out[e] = Object.keys(await import("edge-deadline" + e.slice(1)));
out["index.js"] = Object.keys(await import("./node_modules/edge-deadline/index.js"));
console.log(JSON.stringify(out));`;
    const { stdout } = await runOk(bin.node, ["--input-type=module", "-e", list], { cwd: dir });
    const actual = JSON.parse(stdout);
    assert.deepEqual(actual["index.js"].sort(), actual["."].slice().sort(), "index.js (browsers, Deno, bundlers) and node.js export the same names");
    delete actual["index.js"];
    const exported = Object.entries(actual).flatMap(([e, names]) => names.map((n) => `edge-deadline${e.slice(1)}: ${n}`)).sort();
    const rows = apiTable(readme);
    const bad = rows.filter((r) => r.names.length === 0 || r.names.some((n) => !/^[\w$]+$/.test(n)) || !/^edge-deadline(\/[\w-]+)?$/.test(r.from ?? ""));
    assert.deepEqual(bad, [], "rows whose first cell is not export names or whose second is not an entry point");
    const listed = rows.flatMap((r) => r.names.map((n) => `${r.from}: ${n}`)).sort();
    const dup = listed.filter((n, i) => listed.indexOf(n) !== i);
    assert.deepEqual(dup, [], "listed twice");
    assert.deepEqual(
      { missing: exported.filter((n) => !listed.includes(n)), notExported: listed.filter((n) => !exported.includes(n)) },
      { missing: [], notExported: [] },
    );
  });

  await g.check("the packaged README's quick start is the README's (run above)", () => {
    const packaged = readFileSync(join(dir, "node_modules/edge-deadline/README.md"), "utf8");
    assert.equal(jsBlockUnder(packaged, "Quick start"), jsBlockUnder(readme, "Quick start"));
  });

  await g.check("the packaged README's relative links resolve inside the installed package", () => {
    const pkgDir = join(dir, "node_modules/edge-deadline");
    const own = links(readFileSync(join(pkgDir, "README.md"), "utf8")).filter((t) => !/^[a-z][a-z+.-]*:/i.test(t));
    assert.ok(own.some((t) => t.startsWith("docs/api.md")), "it links to the API reference");
    const broken = ["README.md", ...readdirSync(join(pkgDir, "docs")).map((f) => `docs/${f}`)].flatMap((f) =>
      brokenLinks(join(pkgDir, f), pkgDir).map((b) => `${f}: ${b}`),
    );
    assert.deepEqual(broken, []);
  });

  await g.check("every relative link of the user documents resolves in the repository", () => {
    // js/README.md is the packaged README: its links are checked inside the installed package above.
    const docs = userDocuments().filter((f) => f !== "js/README.md");
    const broken = docs.flatMap((f) => brokenLinks(join(root, f), root).map((b) => `${f}: ${b}`));
    assert.deepEqual(broken, []);
  });

  await g.check("no user document, example or demo page uses project-history words", () => {
    const hits = [];
    const sources = (dir) =>
      readdirSync(join(root, dir), { recursive: true })
        .filter((f) => /\.(m?js|ts|html|css|rs|toml|json)$/.test(f) && !/(^|\/)(node_modules|dist|target|pkg)\//.test(f))
        .map((f) => `${dir}/${f}`);
    for (const f of [...userDocuments(), ...sources("examples"), ...sources("www")]) {
      readFileSync(join(root, f), "utf8")
        .split("\n")
        .forEach((line, i) => {
          for (const re of HISTORY_WORDS) if (re.test(line)) hits.push(`${f}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(hits, []);
  });
}
