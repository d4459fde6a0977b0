// Runs every bench/*.bench.mjs in Node and Deno (each bench prints one JSON
// line: { runtime, rows: { label: nsPerOp }, ...extra }) and prints Markdown
// tables for BENCHMARKS.md. `node bench/run.mjs deadline` runs one bench.
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const deno = join(root, "node_modules/@deno/linux-x64-glibc/deno");
const only = process.argv.slice(2);
const runtimes = [
  ["node", (file) => [process.execPath, [file]]],
  ["deno", (file) => [deno, ["run", "-A", file]]],
];

for (const file of readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.mjs")).sort()) {
  const name = file.replace(".bench.mjs", "");
  if (only.length && !only.includes(name)) continue;
  const results = runtimes.map(([, cmd]) => {
    const [exe, args] = cmd(join(root, "bench", file));
    const out = execFileSync(exe, args, { cwd: root, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" }, encoding: "utf8" });
    return JSON.parse(out.trim().split("\n").pop());
  });
  console.log(`\n### ${name}\n`);
  console.log(`| case | ${results.map((r) => `${r.runtime} ns/op`).join(" | ")} |`);
  console.log(`|---|${results.map(() => "---:").join("|")}|`);
  for (const label of Object.keys(results[0].rows)) {
    console.log(`| ${label} | ${results.map((r) => r.rows[label]?.toFixed(1) ?? "–").join(" | ")} |`);
  }
  const extras = Object.keys(results[0]).filter((k) => k !== "runtime" && k !== "rows");
  for (const k of extras) console.log(`\n${k}: ${results.map((r) => `${r.runtime} ${JSON.stringify(r[k])}`).join("; ")}`);
}
