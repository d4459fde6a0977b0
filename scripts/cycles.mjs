// The layering gate: no import circle between the top-level modules of
// src/core, between those of src/web, or between the files of js/.
//
//   node scripts/cycles.mjs            exits 1 and prints each circle, with the
//                                      line behind each of its edges
//   node scripts/cycles.mjs --graph    prints every edge as well
//
// Rust: a top-level module is `<dir>/<name>.rs` with the files of `<dir>/<name>/`
// that it declares with `mod` (test modules are not part of it). One module uses
// another when its code names it: a `use` or a path in code (`crate::core::x`,
// `super::x`, `super::super::x` from a child file or inline module, or an item the
// directory's mod.rs re-exports from `x`). Comments and doc links are not code,
// and neither is an item under a `#[cfg(test)]`-like attribute (tests may reach
// across the layers). JavaScript: the static `import … from` / `export … from` /
// `import "…"` between the files of js/, as esbuild resolves them (a dynamic
// `import()` loads lazily and does not count).
import { readFileSync, existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const showGraph = process.argv.includes("--graph");

/**
 * Rust source with comments, string and char literals blanked out (newlines kept,
 * so offsets still give line numbers).
 */
function stripRust(src) {
  let out = "";
  let i = 0;
  const blank = (s) => s.replace(/[^\n]/g, " ");
  while (i < src.length) {
    const c = src[i];
    const next = src[i + 1];
    if (c === "/" && next === "/") {
      const end = src.indexOf("\n", i);
      const j = end < 0 ? src.length : end;
      out += blank(src.slice(i, j));
      i = j;
    } else if (c === "/" && next === "*") {
      let depth = 0;
      let j = i;
      while (j < src.length) {
        if (src[j] === "/" && src[j + 1] === "*") (depth++, (j += 2));
        else if (src[j] === "*" && src[j + 1] === "/") {
          depth--;
          j += 2;
          if (depth === 0) break;
        } else j++;
      }
      out += blank(src.slice(i, j));
      i = j;
    } else if (/[rb]/.test(c) && !/[A-Za-z0-9_]/.test(src[i - 1] ?? "") && /^(?:b?r#*")/.test(src.slice(i, i + 40))) {
      // Raw string r"…", r#"…"#, br#"…"#.
      const m = /^b?r(#*)"/.exec(src.slice(i));
      const close = `"${m[1]}`;
      const end = src.indexOf(close, i + m[0].length);
      const j = end < 0 ? src.length : end + close.length;
      out += blank(src.slice(i, j));
      i = j;
    } else if (c === '"' || (c === "b" && next === '"' && !/[A-Za-z0-9_]/.test(src[i - 1] ?? ""))) {
      let j = i + (c === "b" ? 2 : 1);
      while (j < src.length && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      out += blank(src.slice(i, j + 1));
      i = j + 1;
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a, 'static).
      const m = /^'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'/u.exec(src.slice(i, i + 16));
      if (m) {
        out += blank(m[0]);
        i += m[0].length;
      } else (out += c), i++;
    } else (out += c), i++;
  }
  return out;
}

/** The offset just past the bracket matching the one at `open`. */
function matching(code, open) {
  const pairs = { "{": "}", "(": ")", "[": "]" };
  const stack = [];
  for (let j = open; j < code.length; j++) {
    if (pairs[code[j]]) stack.push(pairs[code[j]]);
    else if (code[j] === stack.at(-1)) {
      stack.pop();
      if (!stack.length) return j + 1;
    }
  }
  return code.length;
}

/**
 * Blanks each item under an attribute whose `cfg` turns on only in tests
 * (`#[cfg(test)]`, `#[cfg(all(test, …))]`), and returns the names of the
 * out-of-line modules so declared (`#[cfg(test)] mod tests;`).
 */
function dropTestItems(code) {
  const testModules = new Set();
  const attr = /#\[\s*cfg\s*\(/g;
  let m;
  while ((m = attr.exec(code))) {
    const start = m.index;
    const attrEnd = matching(code, start + 1);
    const pred = code.slice(m.index, attrEnd);
    if (!/\btest\b/.test(pred) || /not\s*\(\s*test\s*\)/.test(pred) || /^#\[\s*cfg\s*\(\s*any\s*\(/.test(pred)) continue;
    // Skip any further attributes, then the item: up to its `;` or its block.
    let j = attrEnd;
    for (;;) {
      while (/\s/.test(code[j] ?? "")) j++;
      if (code[j] === "#" && code[j + 1] === "[") j = matching(code, j + 1);
      else break;
    }
    const decl = /^(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;/.exec(code.slice(j));
    if (decl) testModules.add(decl[1]);
    let k = j;
    while (k < code.length && code[k] !== ";" && code[k] !== "{") k = code[k] === "(" || code[k] === "[" ? matching(code, k) : k + 1;
    const end = code[k] === "{" ? matching(code, k) : k + 1;
    code = code.slice(0, start) + code.slice(start, end).replace(/[^\n]/g, " ") + code.slice(end);
    attr.lastIndex = end;
  }
  return { code, testModules };
}

/** The paths a `use` tree names: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e. */
function expandUse(tree) {
  tree = tree.replace(/\s+as\s+\w+/g, "").replace(/\s+/g, "");
  const braceAt = tree.indexOf("{");
  if (braceAt < 0) return [tree.split("::").filter(Boolean)];
  const prefix = tree.slice(0, braceAt).split("::").filter(Boolean);
  const inner = tree.slice(braceAt + 1, tree.lastIndexOf("}"));
  const parts = [];
  let depth = 0;
  let from = 0;
  for (let j = 0; j <= inner.length; j++) {
    if (inner[j] === "{") depth++;
    else if (inner[j] === "}") depth--;
    else if ((inner[j] === "," && depth === 0) || j === inner.length) {
      if (inner.slice(from, j)) parts.push(inner.slice(from, j));
      from = j + 1;
    }
  }
  return parts.flatMap((p) => expandUse(p).map((rest) => [...prefix, ...rest]));
}

/**
 * The module graph of one Rust directory (src/core or src/web): for each
 * top-level module, the modules it uses, each with the first place it does.
 */
function rustGraph(dir) {
  const layer = dir.split("/").at(-1); // "core" or "web"
  const modRs = stripRust(readFileSync(join(root, dir, "mod.rs"), "utf8"));
  const modules = [...dropTestItems(modRs).code.matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_0-9]+)\s*;/gm)].map((m) => m[1]);
  // Items the directory's mod.rs re-exports (`pub use timers::{sleep, …}`) stand for their module.
  const reexported = new Map();
  for (const m of modRs.matchAll(/\bpub\s+use\s+([^;]+);/g)) {
    for (const path of expandUse(m[1])) {
      if (modules.includes(path[0]) && path.length > 1) reexported.set(path.at(-1), path[0]);
    }
  }
  const graph = new Map(modules.map((name) => [name, new Map()]));
  const target = (segment) => (modules.includes(segment) ? segment : reexported.get(segment));

  for (const name of modules) {
    // The module's files: <name>.rs and the child files it declares, tests left out.
    const files = [];
    const visit = (file, depth, childDir) => {
      const raw = stripRust(readFileSync(join(root, file), "utf8"));
      const { code, testModules } = dropTestItems(raw);
      files.push({ file, depth, code });
      for (const d of code.matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_0-9]+)\s*;/gm)) {
        if (testModules.has(d[1])) continue;
        const child = join(childDir, `${d[1]}.rs`);
        if (existsSync(join(root, child))) visit(child, depth + 1, join(childDir, d[1]));
      }
    };
    visit(join(dir, `${name}.rs`), 0, join(dir, name));

    for (const { file, depth, code } of files) {
      // How deep each offset sits in inline `mod x { … }` blocks.
      const inline = [...code.matchAll(/\bmod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{/g)].map((m) => {
        const open = m.index + m[0].length - 1;
        return [open, matching(code, open)];
      });
      const depthAt = (at) => depth + inline.filter(([a, b]) => a < at && at < b).length;
      const line = (at) => code.slice(0, at).split("\n").length;
      const add = (path, at) => {
        let rest;
        if ((path[0] === "crate" || path[0] === "$crate") && path[1] === layer) rest = path.slice(2);
        else if (path[0] === "super") {
          const supers = path.findIndex((s) => s !== "super");
          // From depth d, d+1 `super`s reach the directory's module (mod.rs).
          if (supers !== depthAt(at) + 1) return;
          rest = path.slice(supers);
        } else return;
        const to = rest[0] && target(rest[0]);
        if (!to || to === name) return;
        const edges = graph.get(name);
        if (!edges.has(to)) edges.set(to, `${file}:${line(at)}`);
      };
      let rest = code;
      for (const m of code.matchAll(/\buse\s+([^;]+);/g)) {
        for (const path of expandUse(m[1])) add(path, m.index);
        rest = rest.slice(0, m.index) + " ".repeat(m[0].length) + rest.slice(m.index + m[0].length);
      }
      for (const m of rest.matchAll(/(?:\$?\bcrate|\bsuper)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+/g)) {
        add(
          m[0].split("::").map((s) => s.trim()),
          m.index,
        );
      }
    }
  }
  return graph;
}

/** The import graph of js/: each file, the js/ files it imports or re-exports from. */
async function jsGraph(dir) {
  const graph = new Map();
  const abs = join(root, dir);
  const files = (await import("node:fs")).readdirSync(abs).filter((f) => /\.(m?js)$/.test(f));
  for (const f of files) graph.set(f, new Map());
  const record = {
    name: "record-imports",
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point") return undefined;
        if (args.kind === "import-statement" && args.path.startsWith(".") && dirname(args.importer) === abs) {
          const to = relative(abs, join(dirname(args.importer), args.path));
          const from = relative(abs, args.importer);
          if (graph.has(to) && to !== from && !graph.get(from).has(to)) {
            const src = readFileSync(args.importer, "utf8");
            const at = src.search(new RegExp(`["']${args.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["']`));
            graph.get(from).set(to, `${dir}/${from}:${src.slice(0, at).split("\n").length}`);
          }
        }
        return { path: args.path, external: true };
      });
    },
  };
  await esbuild.build({ entryPoints: files.map((f) => join(abs, f)), bundle: true, write: false, format: "esm", outdir: "out", logLevel: "silent", plugins: [record] });
  return graph;
}

/** Strongly connected components with more than one member (Tarjan). */
function circles(graph) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v).keys()) {
      if (!idx.has(w)) (strong(w), low.set(v, Math.min(low.get(v), low.get(w))));
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do (w = stack.pop()), on.delete(w), scc.push(w);
      while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) strong(v);
  return found;
}

/** The shortest circle through `start` inside `members`, as a list of nodes. */
function shortestCircle(graph, members, start) {
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of graph.get(v).keys()) {
      if (!members.includes(w)) continue;
      if (w === start) {
        const path = [v];
        while (prev.get(path[0]) !== null) path.unshift(prev.get(path[0]));
        return [...path, start];
      }
      if (!prev.has(w)) (prev.set(w, v), queue.push(w));
    }
  }
  return [start];
}

const graphs = [
  ["src/core", rustGraph("src/core")],
  ["src/web", rustGraph("src/web")],
  ["js", await jsGraph("js")],
];
let failed = false;
for (const [dir, graph] of graphs) {
  if (showGraph) {
    console.log(`${dir}:`);
    for (const [from, edges] of graph) for (const [to, at] of edges) console.log(`  ${from} -> ${to}  (${at})`);
  }
  for (const scc of circles(graph)) {
    failed = true;
    console.log(`\nimport circle in ${dir}: {${scc.join(", ")}}`);
    const path = shortestCircle(graph, scc, scc[0]);
    for (let j = 0; j + 1 < path.length; j++) console.log(`  ${path[j]} -> ${path[j + 1]}  (${graph.get(path[j]).get(path[j + 1])})`);
    const rest = scc.flatMap((v) => [...graph.get(v)].filter(([w]) => scc.includes(w)).map(([w, at]) => [v, w, at])).filter(([v, w]) => !path.some((p, j) => p === v && path[j + 1] === w));
    for (const [v, w, at] of rest) console.log(`  also ${v} -> ${w}  (${at})`);
  }
}
if (failed) {
  console.log("\nA module may use only modules below it: move what both sides need into the lower one (or a small new module), and re-export it where its public path was.");
  process.exit(1);
}
console.log(`no import circle in ${graphs.map(([d, g]) => `${d} (${g.size} modules)`).join(", ")}`);
