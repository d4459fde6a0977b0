// docs/api.md cannot rot: it has one `## \`name\`` heading per export of the
// installed package (no more, no fewer), each with a "Throws" paragraph and a
// runnable example, and every example runs (in Node, against the installed
// tarball) and exits 0. Examples assert what they show.
// The README's checks (quick start, API table, links, wording) run in the same
// installed project: tests/package/readme.mjs.
import assert from "node:assert/strict";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, project, root, run, runOk } from "./lib.mjs";
import { checkReadme } from "./readme.mjs";

/**
 * `[{ name, body, examples: [code] }]` for each `## \`name\`` section of the markdown; an export
 * of a subpath is headed `## \`name\` (edge-deadline/sub)` and named `sub:name`.
 */
export function sections(markdown) {
  const out = [];
  const parts = markdown.split(/^## /m).slice(1);
  for (const part of parts) {
    const title = part.slice(0, part.indexOf("\n"));
    const m = /^`([\w$]+)`(?: \(edge-deadline\/([\w-]+)\))?/.exec(title);
    if (!m) continue;
    const examples = [...part.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((x) => x[1]);
    out.push({ name: m[2] ? `${m[2]}:${m[1]}` : m[1], body: part, examples });
  }
  return out;
}

async function pool(items, size, fn) {
  const queue = [...items];
  await Promise.all(Array.from({ length: size }, async () => {
    while (queue.length) await fn(queue.shift());
  }));
}

export async function checkDocs(g, packed) {
  const dir = await project("docs", packed.tarball);
  // The Hono middleware's example needs `hono` (a devDependency here, installed by users of the subpath),
  // traceWith's the OpenTelemetry API and SDK (devDependencies here, the application's own there).
  symlinkSync(join(root, "node_modules/hono"), join(dir, "node_modules/hono"), "dir");
  symlinkSync(join(root, "node_modules/@opentelemetry"), join(dir, "node_modules/@opentelemetry"), "dir");
  const docs = sections(readFileSync(join(root, "docs/api.md"), "utf8"));
  const listExports = 'const names = (m, p = "") => Object.keys(m).map((k) => p + k); console.log(JSON.stringify([...names(await import("edge-deadline")), ...names(await import("edge-deadline/derive"), "derive:"), ...names(await import("edge-deadline/hono"), "hono:"), ...names(await import("edge-deadline/durable"), "durable:")]))';
  const { stdout } = await runOk(bin.node, ["--input-type=module", "-e", listExports], { cwd: dir });
  const exported = JSON.parse(stdout).sort();

  await g.check("docs/api.md has one heading per export of the installed package", () => {
    const names = docs.map((s) => s.name);
    const dup = names.filter((n, i) => names.indexOf(n) !== i);
    assert.deepEqual(dup, [], "headings documented twice");
    const undocumented = exported.filter((n) => !names.includes(n));
    const notExported = names.filter((n) => !exported.includes(n));
    assert.deepEqual({ undocumented, notExported }, { undocumented: [], notExported: [] });
  });

  await g.check("every section says what it throws and has a runnable example", () => {
    const bad = docs.filter((s) => !/^\*\*Throws/m.test(s.body) || s.examples.length === 0).map((s) => s.name);
    assert.deepEqual(bad, []);
  });

  await g.check("docs/api.md's Errors section lists every error class with its guard, and every code of CODES", async () => {
    const list = `const m = await import("edge-deadline");
const { CODES } = await import("./node_modules/edge-deadline/shared.js"); // js/errors.js, bundled
const classes = Object.keys(m).filter((k) => typeof m[k] === "function" && m[k].prototype instanceof Error);
console.log(JSON.stringify({ classes, guards: classes.filter((c) => typeof m["is" + c] === "function").map((c) => "is" + c), codes: Object.values(CODES) }));`;
    const { classes, guards, codes } = JSON.parse((await runOk(bin.node, ["--input-type=module", "-e", list], { cwd: dir })).stdout);
    const text = readFileSync(join(root, "docs/api.md"), "utf8");
    const errors = text.slice(text.indexOf("\n# Errors\n"), text.indexOf("\n## `DeadlineExceeded`"));
    const rows = (first) => [...errors.matchAll(/^\| `(\w+)` \|(.*)$/gm)].filter((r) => first(r[1]));
    const classRows = new Map(rows((n) => classes.includes(n)).map((r) => [r[1], r[2]]));
    assert.deepEqual(classes.filter((c) => !classRows.has(c)), [], "classes missing from the table");
    assert.deepEqual(guards.filter((gd) => ![...classRows.values()].some((r) => r.includes(`\`${gd}\``))), [], "guards missing");
    assert.ok(errors.includes("`isTimeout"), "isTimeout");
    const listedCodes = rows((n) => /^[A-Z_]+$/.test(n)).map((r) => r[1]);
    assert.deepEqual(codes.filter((c) => !listedCodes.includes(c)), [], "codes of CODES missing from the codes table");
    assert.match(errors, /`\.param`/);
  });

  await checkReadme(g, dir);

  const failures = [];
  const blocks = docs.flatMap((s) => s.examples.map((code, i) => ({ name: s.examples.length > 1 ? `${s.name} #${i + 1}` : s.name, code })));
  await pool(blocks, 4, async ({ name, code }) => {
    const file = join(dir, `example-${name.replace(/\W+/g, "-")}.mjs`);
    writeFileSync(file, code);
    const r = await run(bin.node, [file], { cwd: dir, timeoutMs: 20_000 });
    if (r.code !== 0) failures.push(`${name}: exit ${r.code}\n${(r.stderr || r.stdout).trim().split("\n").slice(0, 12).join("\n")}`);
  });
  await g.check(`all ${blocks.length} examples in docs/api.md run and exit 0`, () => {
    assert.equal(failures.length, 0, failures.join("\n\n"));
  });
}
