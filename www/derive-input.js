// Data for section 3: the built-in data set (drawn here, seeded, from seed
// 003's mixture) and the reader for pasted or dropped text: CSV, JSON Lines,
// or Prometheus (left to the package's `parsePrometheus`). The same format
// sniffing as the CLI (src/bin/edge-deadline/input.rs).

/** mulberry32: a small seeded generator, so the built-in data set is the same on every load. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** One draw of the model `simulate()` uses: lognormal body, or with `tail.share` uniform in the tail. */
function drawer(seed) {
  const u = rng(seed);
  const normal = () => {
    for (;;) {
      const x = 2 * u() - 1;
      const y = 2 * u() - 1;
      const s = x * x + y * y;
      if (s > 0 && s < 1) return x * Math.sqrt((-2 * Math.log(s)) / s);
    }
  };
  return ({ medianMs, sigma }, tail) => (tail && u() < tail.share ? tail.loMs + (tail.hiMs - tail.loMs) * u() : medianMs * Math.exp(sigma * normal()));
}

/** The reference dependency, as `simulate()` takes it. */
export const SEED_003 = { body: { medianMs: 40, sigma: 0.348 }, tail: { share: 0.005, loMs: 300, hiMs: 1500 } };

/**
 * Two buckets of calls, as rows `{ ms, outcome, dependency, operation }`:
 * search/query, 20 000 successes from the reference mixture (its slow tail is a
 * second population) plus 40 errors; payments/authorize, 600 successes and
 * 12 timeouts (too few calls for p99, and censored by the timeout in force).
 */
export function builtinRows() {
  const draw = drawer(3);
  const rows = [];
  const search = { dependency: "search", operation: "query" };
  const payments = { dependency: "payments", operation: "authorize" };
  for (let i = 0; i < 20_000; i++) rows.push({ ms: round(draw(SEED_003.body, SEED_003.tail)), outcome: "ok", ...search });
  for (let i = 0; i < 40; i++) rows.push({ ms: round(draw(SEED_003.body)), outcome: "error", ...search });
  for (let i = 0; i < 600; i++) rows.push({ ms: round(draw({ medianMs: 120, sigma: 0.25 })), outcome: "ok", ...payments });
  for (let i = 0; i < 12; i++) rows.push({ ms: 400, outcome: "timeout", ...payments });
  return rows;
}

const round = (v) => Math.round(v * 1000) / 1000;

/** "csv" | "jsonl" | "prom" | "prom-json", from the first non-blank line (as the CLI does). */
export function sniff(text) {
  const first = text.split("\n").find((l) => l.trim() !== "")?.replace(/^\uFEFF/, "").trim() ?? "";
  if (first.startsWith("{")) {
    return first.includes('"status"') && (first.includes('"data"') || first.endsWith("{") || first.length < 20) ? "prom-json" : "jsonl";
  }
  if (first.startsWith("#")) return "prom";
  const m = /^[A-Za-z0-9_:]+/.exec(first);
  if (m && (first[m[0].length] === "{" || (first[m[0].length] === " " && !first.includes(",")))) return "prom";
  return "csv";
}

/** Duration fields, in ms or (× 1000) seconds. */
const DURATION_FIELDS = [
  ["ms", 1],
  ["duration_ms", 1],
  ["latency_ms", 1],
  ["elapsed_ms", 1],
  ["seconds", 1000],
  ["duration_seconds", 1000],
  ["latency_seconds", 1000],
];

function durationField(names) {
  const found = DURATION_FIELDS.find(([name]) => names.includes(name));
  if (!found) throw new Error(`no duration field: name one of ${DURATION_FIELDS.map(([n]) => n).join(", ")} (found: ${names.join(", ") || "none"})`);
  return found;
}

/** A row for `deriveTimeouts`: `ms` in milliseconds (null when empty), every other field a label. */
function toRow(fields, [durName, factor], where) {
  const row = {};
  for (const [k, v] of Object.entries(fields)) {
    if (k === durName) continue;
    row[k] = v === null || v === undefined ? "" : typeof v === "boolean" ? v : String(v);
  }
  const raw = fields[durName];
  if (raw === "" || raw === null || raw === undefined) row.ms = null;
  else {
    const v = typeof raw === "number" ? raw : Number(String(raw).trim());
    if (!Number.isFinite(v)) throw new Error(`${where}: '${durName}' is not a number: ${JSON.stringify(raw)}`);
    row.ms = v * factor; // the package rejects negatives, naming the row
  }
  return row;
}

/** Splits one CSV line; quoted fields may hold commas and doubled quotes. */
function splitCsv(line, lineNo) {
  const out = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === ",") out.push(field), (field = "");
    else field += c;
  }
  if (quoted) throw new Error(`line ${lineNo}: a quoted field is not closed`);
  out.push(field);
  return out.map((f) => f.trim());
}

/** CSV with a header row → rows. */
export function parseCsv(text) {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const start = lines.findIndex((l) => l.trim() !== "");
  if (start < 0) throw new Error("the text is empty");
  const header = splitCsv(lines[start], start + 1);
  const dur = durationField(header);
  const rows = [];
  for (let i = start + 1; i < lines.length; i++) {
    if (lines[i].trim() === "") continue;
    const cells = splitCsv(lines[i], i + 1);
    if (cells.length !== header.length) throw new Error(`line ${i + 1}: ${cells.length} fields, the header has ${header.length}`);
    rows.push(toRow(Object.fromEntries(header.map((h, j) => [h, cells[j]])), dur, `line ${i + 1}`));
  }
  return rows;
}

/** JSON Lines (one object per line) → rows. */
export function parseJsonl(text) {
  const rows = [];
  let dur;
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    let obj;
    try {
      obj = JSON.parse(line);
    } catch (e) {
      throw new Error(`line ${i + 1}: not JSON (${e.message})`);
    }
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw new Error(`line ${i + 1}: expected an object like {"ms": 42}`);
    dur ??= durationField(Object.keys(obj));
    rows.push(toRow(obj, dur, `line ${i + 1}`));
  });
  if (!rows.length) throw new Error("the text is empty");
  return rows;
}

/** Small examples for the three formats (what the buttons paste). */
export const EXAMPLES = {
  csv: exampleCsv(),
  jsonl: exampleJsonl(),
  prom: `# HELP dependency_latency_seconds Latency of calls to dependencies
# TYPE dependency_latency_seconds histogram
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.025"} 100
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.05"} 600
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.1"} 990
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="+Inf"} 1000
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="ok"} 50.5
dependency_latency_seconds_count{dependency="search",operation="query",outcome="ok"} 1000
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.025"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.05"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.1"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="+Inf"} 7
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="timeout"} 35
dependency_latency_seconds_count{dependency="search",operation="query",outcome="timeout"} 7
`,
};

function exampleCsv() {
  const draw = drawer(11);
  const lines = ["ms,outcome,dependency,operation"];
  for (let i = 0; i < 400; i++) lines.push(`${draw({ medianMs: 80, sigma: 0.3 }).toFixed(1)},ok,llm,first-token`);
  for (let i = 0; i < 3; i++) lines.push(",timeout,llm,first-token");
  return `${lines.join("\n")}\n`;
}

function exampleJsonl() {
  const draw = drawer(12);
  const lines = [];
  for (let i = 0; i < 300; i++) lines.push(JSON.stringify({ ms: +draw({ medianMs: 900, sigma: 0.4 }).toFixed(1), outcome: "ok", dependency: "llm", operation: "complete" }));
  lines.push(JSON.stringify({ ms: 30000, outcome: "timeout", dependency: "llm", operation: "complete" }));
  return `${lines.join("\n")}\n`;
}

const SUCCESS = new Set(["", "success", "ok", "true"]);
/** Whether an outcome value counts as a success (the package's accepted spellings; none: success). */
export const isSuccess = (v) => v === undefined || v === null || v === true || (typeof v === "string" && SUCCESS.has(v.trim().toLowerCase()));
