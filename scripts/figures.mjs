// The figures gate: no measured figure in a code comment. What something costs or weighs
// (ns, µs, a size in KB/KiB/MB/MiB or bytes, a measured ratio) lives in BENCHMARKS.md, next to
// the command that measured it; a comment names the row instead: (BENCHMARKS.md, "Deadlines").
// Limits and defaults that are the code's behaviour ("at most 16 KB", "256 KiB", "2^31 − 1 ms",
// "below 1 ns") are not figures and pass: a size counts as measured when its sentence says so
// (gzip, measured, cost, larger, smaller, grew, →), a time in ns or µs always does, and a ratio
// or a percentage when it says faster, slower or cost.
// The documents (README.md, CONTRIBUTING.md, docs/*.md) are held to the same rules over their
// text outside code blocks (they say why and name the section for the figure), except that a size
// after a word that makes it a bound ("≤ 16 KB", "at most 16 MiB", "over 16 MiB") is a limit, not a
// measurement.
// Run: `node scripts/figures.mjs` (part of `node tests/run.mjs lint`); exits 1 with file:line per hit.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function* files(dir, ext) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p, ext);
    else if (e.name.endsWith(ext)) yield p;
  }
}

/** The comment text of each line (null where the line has none); block comments and JSDoc included. */
function comments(text) {
  const out = [];
  let inBlock = false;
  for (const line of text.split("\n")) {
    if (inBlock) {
      const end = line.indexOf("*/");
      out.push(end < 0 ? line : line.slice(0, end));
      if (end >= 0) inBlock = false;
      continue;
    }
    // A comment starts at `//` or `/*` outside a string literal (good enough for this code base:
    // strings holding `//` are URLs, whose `:` the check below skips).
    const m = /(^|[^:"'`\\])(\/\/|\/\*)/.exec(line);
    if (!m) {
      out.push(null);
      continue;
    }
    const start = m.index + m[1].length;
    const rest = line.slice(start + 2);
    if (m[2] === "/*") {
      const end = rest.indexOf("*/");
      if (end < 0) inBlock = true;
      out.push(end < 0 ? rest : rest.slice(0, end));
    } else out.push(rest);
  }
  return out;
}

// A number: digits with thin or plain spaces, commas or a point inside, or a range (0.5–1.1).
const NUM = String.raw`(?<![\^\w.])\d(?:[\d.,]|[  ](?=\d{3}\b))*(?:\s?[–-]\s?\d[\d.,]*)?`;
const TIME = new RegExp(String.raw`${NUM}\s?(?:ns|µs|us)\b`);
const SIZE = new RegExp(String.raw`${NUM}\s?(?:KB|KiB|MB|MiB|B)\b`);
const RATIO = new RegExp(String.raw`(?:(?:measured|costs?|took|read)\s+(?:about\s+)?${NUM}\s?(?:×|x\b|times\b))|(?:${NUM}\s?(?:×|x\b|%)\s+(?:faster|slower|larger|smaller))`);
const MS = new RegExp(String.raw`(?:(?:about|costs?|took|takes|measured)\s+(?:about\s+)?${NUM}\s?ms\b)|(?:${NUM}\s?ms\s+(?:slower|faster|of start-up))`);
// A size is measured when its sentence says so; "held 345 MiB" says it at the figure itself.
const SIZE_HELD = new RegExp(String.raw`(?:held|weighs?|took)\s+(?:about\s+)?${NUM}\s?(?:KB|KiB|MB|MiB|B)\b`);
const SIZE_SAYS = /gzip|measur|\bcost|larger|smaller|\bgrew|\bgrow|\badd(s|ed)?\b|→|twiggy|\.wasm/i;
// Behaviour, not measurement: the sketch's lowest indexable duration (MIN_INDEXABLE_MS).
const BEHAVIOUR = /(?:below|above) 1 ns\b|\(1 ns\)|\b1 ns to\b/g;

// In the docs: a size that is a bound the code or a check enforces.
const BOUND = new RegExp(String.raw`(?:≤|<|at most|up to|under|past|over|allows?|default|limit|cap)\s+(?:of\s+)?(?:about\s+)?${NUM}\s?(?:KB|KiB|MB|MiB|B)\b`, "g");

/** `file:line` hits among `lines` (null where a line has no text to check). */
function scan(file, lines, behaviour) {
  const hits = [];
  lines.forEach((c, i) => {
    if (c === null) return;
    const text = behaviour.reduce((t, re) => t.replace(re, ""), c);
    // A sentence often spans lines: the word that makes a size a measurement ("measured
    // 15.8 KB …", "cost 5 KB, … this one 0.4 KB") may sit on the line before.
    const near = [lines[i - 1], c].filter((l) => l !== null && l !== undefined).join(" ");
    const why = TIME.exec(text)?.[0] ?? (SIZE_SAYS.test(near) ? SIZE.exec(text)?.[0] : undefined) ?? SIZE_HELD.exec(text)?.[0] ?? RATIO.exec(text)?.[0] ?? MS.exec(text)?.[0] ?? null;
    if (why) hits.push(`${relative(root, file)}:${i + 1}: "${why}" in: ${c.trim()}`);
  });
  return hits;
}

export function check() {
  const hits = [];
  for (const [dir, ext] of [["src", ".rs"], ["js", ".js"]]) {
    for (const file of files(join(root, dir), ext)) hits.push(...scan(file, comments(readFileSync(file, "utf8")), [BEHAVIOUR]));
  }
  // The documents, whole but for their code blocks.
  const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
  for (const file of ["README.md", "CONTRIBUTING.md", ...docs].map((f) => join(root, f))) {
    let inCode = false;
    const lines = readFileSync(file, "utf8").split("\n").map((l) => {
      if (l.startsWith("```")) return ((inCode = !inCode), null);
      return inCode ? null : l;
    });
    hits.push(...scan(file, lines, [BEHAVIOUR, BOUND]));
  }
  // BENCHMARKS.md itself: current figures only (no dates, commit hashes or before/after arrows:
  // history is git's), at most 300 lines.
  const bench = readFileSync(join(root, "BENCHMARKS.md"), "utf8").split("\n");
  if (bench.length - 1 > 300) hits.push(`BENCHMARKS.md: ${bench.length - 1} lines, over 300`);
  bench.forEach((line, i) => {
    if (/\b20\d\d-\d\d-\d\d\b|\b[0-9a-f]{7,40}'s\b|\bcommit [0-9a-f]{7}|\d\s*→\s*\d/.test(line)) hits.push(`BENCHMARKS.md:${i + 1}: a date, a commit or a before → after: ${line.trim()}`);
  });
  return hits;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const hits = check();
  for (const h of hits) console.log(h);
  if (hits.length) {
    console.log(`\n${hits.length} line(s) cite a measured figure: name the BENCHMARKS.md row instead, e.g. (BENCHMARKS.md, "Deadlines"), and put the figure there with its command.`);
    process.exit(1);
  }
  console.log("figures: no measured figure in src/ or js/ comments, or in README.md, CONTRIBUTING.md and docs/; BENCHMARKS.md current only, ≤ 300 lines");
}
