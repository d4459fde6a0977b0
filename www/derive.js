// Section 3, derive timeouts: `deriveTimeouts()` on the built-in data set or
// on pasted / dropped CSV, JSON Lines or Prometheus text (`parsePrometheus`),
// the histogram of the charted bucket with its lines, the candidates, the
// warnings, and `simulate()`'s retry-versus-wait table and chart.
import { deriveTimeouts, parsePrometheus, simulate } from "./pkg/derive-index.js";
import { histogramChart, simChart } from "./charts.js";
import { EXAMPLES, SEED_003, builtinRows, isSuccess, parseCsv, parseJsonl, sniff } from "./derive-input.js";
import { $, badge, describeError, el, ms, num, pct } from "./dom.js";

const COLORS = { p50: "#4d4d4d", p99: "#0b5cad", p999: "#6b4fbb", timeout: "#0a7d5a", configured: "#a1150e", candidate: "#a35200" };
const CANDIDATE_LABEL = { p99: "p99", "2xp99": "2×p99", "p99.9": "p99.9", configured: "configured", "above body": "just above the body" };

export function mountDerive() {
  const section = $("#derive");
  const o = {
    q: $("#opt-q"),
    safety: $("#opt-safety"),
    configured: $("#opt-configured"),
    by: $("#opt-by"),
    outcome: $("#opt-outcome"),
  };
  const text = $("#data-text");
  const file = $("#data-file");
  const source = $("#derive-source");
  const errorEl = $("#derive-error");
  const tbody = $("#derived tbody");
  const pick = $("#chart-bucket");
  const candBody = $("#candidates tbody");
  const warnings = $("#warnings");
  const histEl = $("#hist");
  const hist = histogramChart(histEl);

  /** What is being derived: rows (built-in, CSV, JSON Lines) or Prometheus histograms. */
  let data;
  let results = [];
  let builtin;

  const options = () => {
    const configured = o.configured.valueAsNumber;
    return {
      q: Number(o.q.value),
      safety: num(o.safety, 2),
      by: o.by.value.split(",").map((s) => s.trim()).filter(Boolean),
      outcome: o.outcome.value.trim() || "outcome",
      ...(Number.isFinite(configured) && configured > 0 ? { configuredMs: configured } : {}),
    };
  };

  const bucketName = (bucket) => Object.values(bucket).join("/") || "(all calls)";
  const bucketKey = (bucket, by) => JSON.stringify(by.map((b) => bucket[b] ?? ""));

  function fail(e) {
    errorEl.textContent = describeError(e);
    errorEl.hidden = false;
    section.dataset.error = e?.name ?? "Error";
  }

  function derive() {
    errorEl.hidden = true;
    delete section.dataset.error;
    if (!data) return;
    const opts = options();
    try {
      results = deriveTimeouts(data.kind === "prom" ? data.histograms : data.rows, opts);
    } catch (e) {
      // The package's TypeError / RangeError, naming the option, row or sample.
      results = [];
      render(opts);
      return fail(e);
    }
    render(opts);
  }

  function render(opts) {
    tbody.replaceChildren(
      ...results.map((r) => {
        const name = bucketName(r.bucket);
        const tail = r.tail
          ? `gap ${ms(r.tail.bodyEdgeMs)} → ${ms(r.tail.tailStartMs)}; ${pct(r.tail.tailShare)} beyond`
          : "none found";
        return el(
          "tr",
          { dataset: { bucket: name } },
          el("th", { scope: "row" }, name),
          el("td", { className: "n" }, r.n.toLocaleString("en-US")),
          el("td", { className: "p50" }, ms(r.p50)),
          el("td", { className: "p99" }, ms(r.p99)),
          el("td", { className: "p999" }, ms(r.p999)),
          el("td", { className: "timeout" }, el("strong", {}, ms(r.timeoutMs)), el("br"), el("small", {}, `p${+(r.q * 100).toFixed(2)} × ${r.safety}`)),
          el("td", { className: "excluded text" }, `${r.excluded.timeouts} timeouts, ${r.excluded.errors} errors`),
          el("td", { className: "tail text" }, tail),
          el("td", { className: "warn text" }, ...r.warnings.flatMap((w) => [badge("warn", w.code), " "])),
        );
      }),
    );
    warnings.replaceChildren(
      ...results.flatMap((r) => r.warnings.map((w) => el("li", { dataset: { code: w.code } }, el("strong", {}, `${bucketName(r.bucket)}, ${w.code}: `), w.message))),
    );
    if (!warnings.children.length && results.length) warnings.append(el("li", {}, "No warnings: the data supports these values."));
    const keep = pick.value;
    pick.replaceChildren(...results.map((r, i) => el("option", { value: String(i) }, bucketName(r.bucket))));
    const again = results.findIndex((r) => bucketName(r.bucket) === keep);
    if (again >= 0) pick.value = String(again);
    else {
      // Start on the most interesting bucket: the one whose tail shape was found, else the largest.
      const tailed = results.findIndex((r) => r.tail);
      const largest = results.reduce((best, r, i) => (r.n > (results[best]?.n ?? -1) ? i : best), 0);
      pick.value = String(tailed >= 0 ? tailed : largest);
    }
    chart(opts);
    section.dataset.buckets = String(results.length);
    section.dataset.runState = "done";
  }

  function chart(opts) {
    const r = results[Number(pick.value)];
    if (!r) {
      hist.update({ bins: [], markers: [] });
      candBody.replaceChildren();
      return;
    }
    const bins = data.kind === "prom" ? promBins(r, opts) : sampleBins(r, opts);
    const markers = [];
    const add = (label, v, color, extra = {}) => {
      if (v === null || v === undefined || !(v > 0)) return;
      const same = markers.find((m) => Math.abs(m.ms - v) <= 0.005 * v);
      if (same) same.label += ` = ${label}`;
      else markers.push({ label, ms: v, color, ...extra });
    };
    add("p50", r.p50, COLORS.p50, { dash: [2, 3] });
    add("p99", r.p99, COLORS.p99);
    add("p99.9", r.p999, COLORS.p999);
    add(`derived timeout ${ms(r.timeoutMs)}`, r.timeoutMs, COLORS.timeout, { width: 3 });
    for (const c of r.candidates) {
      if (c.name === "p99" || c.name === "p99.9") continue; // drawn above as percentiles
      if (c.name === "configured") add(`configured ${ms(c.timeoutMs)}`, c.timeoutMs, COLORS.configured, { width: 2.5 });
      else add(CANDIDATE_LABEL[c.name] ?? c.name, c.timeoutMs, COLORS.candidate, { dash: [6, 4] });
    }
    hist.update({ bins, markers });
    const name = bucketName(r.bucket);
    histEl.setAttribute(
      "aria-label",
      `Latency histogram of ${name} on log axes: p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, p99.9 ${ms(r.p999)}, derived timeout ${ms(r.timeoutMs)}${opts.configuredMs ? `, configured ${ms(opts.configuredMs)}` : ""}`,
    );
    candBody.replaceChildren(
      ...r.candidates.map((c) =>
        el(
          "tr",
          { dataset: { candidate: c.name } },
          el("th", { scope: "row" }, CANDIDATE_LABEL[c.name] ?? c.name),
          el("td", {}, ms(c.timeoutMs)),
          el("td", {}, pct(c.falseTimeoutRate)),
        ),
      ),
    );
  }

  /** Log-spaced bins of the bucket's successful durations (raw rows). */
  function sampleBins(r, opts) {
    const key = bucketKey(r.bucket, opts.by);
    const xs = [];
    for (const row of data.rows) {
      if (!isSuccess(row[opts.outcome]) || !(row.ms > 0)) continue;
      if (bucketKey(row, opts.by) === key) xs.push(row.ms);
    }
    if (!xs.length) return [];
    let lo = Infinity;
    let hi = 0;
    for (const x of xs) (lo = Math.min(lo, x)), (hi = Math.max(hi, x));
    const per = 20; // bins per decade
    const start = Math.floor(Math.log10(lo) * per);
    const end = Math.floor(Math.log10(hi) * per);
    const bins = [];
    for (let i = start; i <= end; i++) bins.push({ lo: 10 ** (i / per), hi: 10 ** ((i + 1) / per), count: 0 });
    for (const x of xs) bins[Math.min(bins.length - 1, Math.floor(Math.log10(x) * per) - start)].count++;
    return bins;
  }

  /** The histogram buckets (successful series matching the bucket's labels), summed. */
  function promBins(r, opts) {
    const series = data.histograms.filter(
      (h) => opts.by.every((b) => (h.labels[b] ?? "") === (r.bucket[b] ?? "")) && isSuccess(h.labels[opts.outcome]),
    );
    if (!series.length) return [];
    const bounds = series[0].boundsMs;
    const same = series.filter((h) => h.boundsMs.length === bounds.length && h.boundsMs.every((b, i) => b === bounds[i]));
    const bins = [];
    for (let i = 0; i < bounds.length; i++) {
      const count = same.reduce((a, h) => a + h.cumulative[i] - (i ? h.cumulative[i - 1] : 0), 0);
      const hi = bounds[i];
      if (!Number.isFinite(hi)) continue; // the +Inf bucket has no width to draw
      bins.push({ lo: i ? bounds[i - 1] : hi / 2, hi, count });
    }
    return bins;
  }

  // ── sources ─────────────────────────────────────────────────────────────────
  function useBuiltin() {
    builtin ??= builtinRows();
    data = { kind: "rows", rows: builtin };
    o.by.value = "dependency,operation";
    o.outcome.value = "outcome";
    source.textContent = `Built-in data set: ${builtin.length.toLocaleString("en-US")} calls drawn in this page (seeded) — search/query from a lognormal body with a slow tail, payments/authorize a small bucket whose slow calls time out.`;
    section.dataset.source = "builtin";
    derive();
  }

  function useText(raw, from = "the text box") {
    errorEl.hidden = true;
    const format = sniff(raw);
    try {
      if (format === "prom" || format === "prom-json") {
        const histograms = parsePrometheus(raw);
        data = { kind: "prom", histograms };
        source.textContent = `${from}: Prometheus ${format === "prom" ? "exposition" : "query response"}, ${histograms.length} histogram series (${[...new Set(histograms.map((h) => h.metric))].join(", ")}).`;
      } else {
        const rows = format === "csv" ? parseCsv(raw) : parseJsonl(raw);
        data = { kind: "rows", rows };
        source.textContent = `${from}: ${format === "csv" ? "CSV" : "JSON Lines"}, ${rows.length.toLocaleString("en-US")} rows.`;
      }
    } catch (e) {
      data = undefined;
      results = [];
      render(options());
      source.textContent = `${from}: read as ${format}.`;
      return fail(e);
    }
    section.dataset.source = format;
    derive();
  }

  async function readFile(f) {
    const raw = await f.text();
    text.value = raw;
    useText(raw, `${f.name}`);
  }

  // ── wiring ──────────────────────────────────────────────────────────────────
  $("#derive-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (text.value.trim()) useText(text.value);
    else fail(new Error("the text box is empty: paste CSV, JSON Lines or a Prometheus exposition, drop a file, or use the built-in data set"));
  });
  $("#derive-builtin").addEventListener("click", useBuiltin);
  for (const b of section.querySelectorAll("[data-example]")) {
    b.addEventListener("click", () => {
      text.value = EXAMPLES[b.dataset.example];
      useText(text.value, `Example ${b.textContent.replace(/^Example /, "")}`);
    });
  }
  for (const input of Object.values(o)) input.addEventListener("change", derive);
  pick.addEventListener("change", () => chart(options()));
  file.addEventListener("change", () => file.files[0] && readFile(file.files[0]).catch(fail));
  text.addEventListener("dragover", (e) => {
    e.preventDefault();
    text.classList.add("dragging");
  });
  text.addEventListener("dragleave", () => text.classList.remove("dragging"));
  text.addEventListener("drop", (e) => {
    e.preventDefault();
    text.classList.remove("dragging");
    const f = e.dataTransfer?.files?.[0];
    if (f) readFile(f).catch(fail);
  });

  useBuiltin();
  mountSimulation();
}

// ── retry or wait: simulate() ──────────────────────────────────────────────────

/** A failure share difference below this (1 call in 1 000) is not a win. */
const FAILURE_MARGIN = 0.001;

/**
 * Which policy wins at each timeout of the sweep, as runs of consecutive
 * timeouts with the same winner and reason: fewer failed calls first, then
 * the lower end-to-end p99.9 (within 1% is no difference).
 */
function verdicts(ts, wait, once) {
  const judge = (w, o) => {
    if (Math.abs(w.failureRate - o.failureRate) >= FAILURE_MARGIN) {
      return o.failureRate < w.failureRate ? ["retry", "fewer calls fail"] : ["wait", "fewer calls fail"];
    }
    if (Math.abs(w.p999Ms - o.p999Ms) > 0.01 * Math.max(w.p999Ms, o.p999Ms)) {
      return o.p999Ms < w.p999Ms ? ["retry", "lower p99.9"] : ["wait", "lower p99.9"];
    }
    return ["none", ""];
  };
  const runs = [];
  ts.forEach((t, i) => {
    const [winner, reason] = judge(wait[i], once[i]);
    const last = runs.at(-1);
    if (last && last.winner === winner && last.reason === reason) {
      Object.assign(last, { toMs: t, to: i, points: last.points + 1 });
    } else {
      runs.push({ winner, reason, fromMs: t, toMs: t, from: i, to: i, points: 1 });
    }
  });
  const who = { retry: "one retry wins", wait: "waiting wins", none: "no difference" };
  const fig = (i) => `${pct(once[i].failureRate)} vs ${pct(wait[i].failureRate)} fail, p99.9 ${ms(once[i].p999Ms)} vs ${ms(wait[i].p999Ms)}`;
  return runs.map((r) => {
    const span = r.points === 1 ? ms(r.fromMs) : `${ms(r.fromMs)} – ${ms(r.toMs)}`;
    const detail = r.winner === "none" ? "both answer alike" : `${r.reason} (retry vs wait: ${fig(r.from)}${r.points > 1 ? ` … ${fig(r.to)}` : ""})`;
    return { ...r, text: `${span} per attempt: ${who[r.winner]}: ${detail}`, short: `${who[r.winner]} from ${ms(r.fromMs)} to ${ms(r.toMs)}` };
  });
}
function mountSimulation() {
  const f = { median: $("#sim-median"), sigma: $("#sim-sigma"), share: $("#sim-share"), lo: $("#sim-lo"), hi: $("#sim-hi"), n: $("#sim-n") };
  const tbody = $("#sim tbody");
  const scenarioEl = $("#sim-scenario");
  const errorEl = $("#sim-error");
  const sc = simChart($("#sim-chart"));
  const verdictEl = $("#sim-verdict");
  const chartEl = $("#sim-chart");
  const chartLabel = chartEl.getAttribute("aria-label");

  function run() {
    // Nothing of the previous run stays on screen if this one fails.
    errorEl.hidden = true;
    scenarioEl.textContent = "";
    tbody.replaceChildren();
    verdictEl.replaceChildren();
    chartEl.setAttribute("aria-label", chartLabel);
    const share = num(f.share, 0.5) / 100;
    const scenario = {
      body: { medianMs: num(f.median, SEED_003.body.medianMs), sigma: num(f.sigma, SEED_003.body.sigma) },
      ...(share > 0 ? { tail: { share, loMs: num(f.lo, 300), hiMs: num(f.hi, 1500) } } : {}),
      n: Math.round(num(f.n, 200_000)),
      seed: 1,
    };
    try {
      const { scenario: s } = simulate(scenario);
      const strategies = [
        [`timeout p99 (${ms(s.p99Ms)}) + 1 retry`, { timeoutMs: s.p99Ms, retries: 1 }],
        [`timeout p99.9 (${ms(s.p999Ms)}), no retry`, { timeoutMs: s.p999Ms, retries: 0 }],
        [`timeout 2×p99 (${ms(2 * s.p99Ms)}), no retry`, { timeoutMs: 2 * s.p99Ms, retries: 0 }],
        ["library default 5 s, no retry", { timeoutMs: 5_000, retries: 0 }],
      ];
      const table = simulate(scenario, strategies.map(([, p]) => p));
      scenarioEl.textContent = `${scenario.n.toLocaleString("en-US")} simulated calls: p50 ${ms(s.p50Ms)}, p90 ${ms(s.p90Ms)}, p99 ${ms(s.p99Ms)}, p99.9 ${ms(s.p999Ms)}.`;
      tbody.replaceChildren(
        ...table.policies.map((p, i) =>
          el(
            "tr",
            { dataset: { strategy: ["p99+retry", "p999", "2xp99", "default"][i] } },
            el("th", { scope: "row" }, strategies[i][0]),
            el("td", {}, ms(p.p99Ms)),
            el("td", { className: "p999" }, ms(p.p999Ms)),
            el("td", {}, pct(p.failureRate)),
            el("td", {}, pct(p.extraLoad)),
          ),
        ),
      );
      // The chart: 16 timeouts from p50 to past the tail, waiting vs one retry, on fewer calls.
      const from = s.p50Ms;
      const to = Math.max(s.p999Ms, scenario.tail?.hiMs ?? 0, 4 * s.p99Ms) * 1.2;
      const ts = Array.from({ length: 16 }, (_, i) => from * (to / from) ** (i / 15));
      const sweep = simulate({ ...scenario, n: Math.min(scenario.n, 20_000) }, ts.flatMap((timeoutMs) => [{ timeoutMs }, { timeoutMs, retries: 1 }]));
      const wait = sweep.policies.filter((_, i) => i % 2 === 0);
      const once = sweep.policies.filter((_, i) => i % 2 === 1);
      sc.update([ts, wait.map((p) => p.p999Ms), once.map((p) => p.p999Ms), wait.map((p) => p.failureRate), once.map((p) => p.failureRate)]);
      const ranges = verdicts(ts, wait, once);
      verdictEl.replaceChildren(
        ...ranges.map((r) =>
          el("li", { dataset: { winner: r.winner, fromMs: String(r.fromMs), toMs: String(r.toMs), points: String(r.points) } }, r.text),
        ),
      );
      chartEl.setAttribute("aria-label", `${chartLabel}. ${ranges.map((r) => r.short).join("; ")}.`);
      $("#derive").dataset.sim = "done";
    } catch (e) {
      errorEl.textContent = describeError(e);
      errorEl.hidden = false;
    }
  }
  $("#sim-form").addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  run();
}
