// Section 5, fleet timeouts: several simulated isolates, each a `TimeoutBook`
// recording its calls, flush to ONE aggregator (`kvAggregator` of
// edge-deadline/durable, on an in-page store shaped like Deno KV) and serve
// `book.timeout(bucket, { fallbackMs })` from the table they read back. The
// merging, windowing and deriving are the package's; the page only draws
// latencies, moves a simulated clock and plots what the books serve.
//
// # Simulated time
// The aggregator takes its clock as an option (`now`), so one step of the
// simulation is ten simulated seconds: every isolate records its calls,
// flushes, and refreshes its table, then serves. Windows of a simulated
// minute roll over in well under a second of real time.
//
// # The oracle
// Next to what the books serve, the page keeps every sample it drew, by
// window, and computes the exact p99 × safety over the span the aggregator
// derives from (the current window and the one before, and older ones while
// there are too few samples): the served value must sit within the
// sketch's relative error of it once converged.
//
// Stop clears the one timer a run arms and waits for the step in flight.
import { TimeoutBook } from "./pkg/derive-index.js";
import { aggregatorBinding, kvAggregator } from "./pkg/durable-index.js";
import { fleetChart } from "./charts.js";
import { $, el, logLine, ms } from "./dom.js";

const ISOLATES = 6;
/** Calls per isolate, bucket and step. */
const CALLS = 150;
/** One step of simulated time: every isolate flushes and refreshes once. */
const STEP_MS = 10_000;
/** Real time between steps. */
const TICK_MS = 60;
/** Simulated minutes drawn. */
const SPAN_MIN = 30;
/** The most steps kept in the page's history (and its data attribute). */
const HISTORY = 600;
const AGGREGATOR = { windowMs: 60_000, windows: 3, q: 0.99, safety: 2, relativeError: 0.01 };
/** Taken from the core: the span grows back past two windows while it holds fewer than 10 / (1 − q) samples. */
const SAMPLES_BEYOND = 10;
const BOOK = { flushEveryMs: 1, refreshEveryMs: 3_600_000, maxStepFactor: 1.25 };
const FALLBACK_MS = 1_000;
/** The upstream's two operations: a lognormal body and a slow uniform tail. */
const BUCKETS = [
  { name: "search/query", color: "#0b5cad", body: { medianMs: 40, sigma: 0.348 }, tail: { share: 0.005, loMs: 300, hiMs: 1500 } },
  { name: "profile/get", color: "#0a7d5a", body: { medianMs: 12, sigma: 0.3 }, tail: { share: 0.002, loMs: 80, hiMs: 400 } },
];
/** Simulated start: a window boundary, so the first window is whole. */
const EPOCH = Date.UTC(2026, 0, 1);

/**
 * The part of `Deno.Kv` kvAggregator uses (get, getMany, list, atomic with
 * check, set and delete), in memory, with `expireIn` counted on the simulated clock.
 */
class MemoryKv {
  #rows = new Map();
  #stamp = 0;
  #now;
  constructor(now) {
    this.#now = now;
  }
  #live(id) {
    const row = this.#rows.get(id);
    if (row && row.expiresAt <= this.#now()) {
      this.#rows.delete(id);
      return undefined;
    }
    return row;
  }
  async get(key) {
    const row = this.#live(JSON.stringify(key));
    return { key, value: row ? row.value : null, versionstamp: row ? row.versionstamp : null };
  }
  async getMany(keys) {
    return Promise.all(keys.map((key) => this.get(key)));
  }
  async *list({ prefix }) {
    const under = (key) => key.length > prefix.length && prefix.every((p, i) => key[i] === p);
    for (const id of [...this.#rows.keys()]) {
      const row = this.#live(id);
      if (row && under(row.key)) yield { key: row.key, value: row.value, versionstamp: row.versionstamp };
    }
  }
  atomic() {
    const checks = [];
    const ops = [];
    const op = {
      check: (...entries) => (checks.push(...entries), op),
      set: (key, value, options) => (ops.push({ key, value, expireIn: options?.expireIn }), op),
      delete: (key) => (ops.push({ key, remove: true }), op),
      commit: async () => {
        for (const c of checks) if ((this.#live(JSON.stringify(c.key))?.versionstamp ?? null) !== c.versionstamp) return { ok: false };
        const versionstamp = String(++this.#stamp).padStart(20, "0");
        for (const o of ops) {
          const id = JSON.stringify(o.key);
          if (o.remove) this.#rows.delete(id);
          else {
            const value = o.value instanceof Uint8Array ? o.value.slice() : o.value;
            this.#rows.set(id, { key: o.key, value, versionstamp, expiresAt: o.expireIn === undefined ? Infinity : this.#now() + o.expireIn });
          }
        }
        return { ok: true, versionstamp };
      },
    };
    return op;
  }
}

/** mulberry32: seeded, so every run draws the same calls. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

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
  return ({ body, tail }) => (u() < tail.share ? tail.loMs + (tail.hiMs - tail.loMs) * u() : body.medianMs * Math.exp(body.sigma * normal()));
}

/** Exact rank-⌊q·(n−1)⌋ quantile (the sketch's definition) of unsorted samples. */
function exactQuantile(samples, q) {
  if (samples.length === 0) return undefined;
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.floor(q * (sorted.length - 1) + 1e-9)];
}

export function mountFleet() {
  const section = $("#fleet");
  const startButton = $("#fl-start");
  const stopButton = $("#fl-stop");
  const shiftButtons = [...section.querySelectorAll("[data-fleet-scale]")];
  const status = $("#fleet-status");
  const log = $("#fleet-log");
  const chartEl = $("#fleet-chart");
  const chartLabel = chartEl.getAttribute("aria-label");
  const rowsBody = $("#fleet-buckets tbody");
  const isolatesBody = $("#fleet-isolates tbody");
  // Made at the first draw: nothing of this section is built at load.
  let chart;
  let scale = 1;
  let run;

  startButton.disabled = false;
  section.dataset.mounted = "true";
  section.dataset.maxStepFactor = String(BOOK.maxStepFactor);
  section.dataset.relativeError = String(AGGREGATOR.relativeError);
  section.dataset.scale = String(scale);

  function start() {
    const r = {
      t: EPOCH,
      step: 0,
      stopped: false,
      timer: undefined,
      inFlight: Promise.resolve(),
      draw: drawer(5),
      /** window index → bucket → samples drawn in that window */
      samples: new Map(),
      history: { x: [], scale: [], ...Object.fromEntries(BUCKETS.flatMap((b, i) => [[`served${i}`, []], [`exact${i}`, []], [`n${i}`, []]])) },
      isolates: [],
      warnings: 0,
    };
    const now = () => r.t;
    r.kv = new MemoryKv(now);
    r.agg = kvAggregator(r.kv, { ...AGGREGATOR, now });
    const write = (line) => logLine(log, `t=${((r.t - EPOCH) / 60_000).toFixed(2)}min ${line}`);
    r.write = write;
    for (let i = 0; i < ISOLATES; i++) {
      const iso = { id: i + 1, calls: 0, sent: 0, served: BUCKETS.map(() => FALLBACK_MS) };
      iso.book = new TimeoutBook({
        ...BOOK,
        // In-process, as a server's own code reaches it: the binding needs no token.
        aggregator: aggregatorBinding(r.agg),
        base: "https://aggregator.demo",
        onWarning: (w) => {
          r.warnings++;
          if (i === 0) write(`isolate=1 warning=${w.code} msg="${w.message}"`);
        },
      });
      r.isolates.push(iso);
    }
    run = r;
    log.textContent = "";
    isolatesBody.replaceChildren(
      ...r.isolates.map((iso) =>
        el("tr", { dataset: { isolate: String(iso.id) } }, el("th", { scope: "row" }, `isolate ${iso.id}`), el("td", { className: "calls" }), el("td", { className: "sent" }), ...BUCKETS.map((_, j) => el("td", { className: `served${j}` }))),
      ),
    );
    section.dataset.steps = "0";
    section.dataset.runs = String(Number(section.dataset.runs ?? 0) + 1);
    section.dataset.runState = "running";
    delete section.dataset.state;
    delete section.dataset.history;
    const hadFocus = document.activeElement === startButton;
    startButton.disabled = true;
    stopButton.disabled = false;
    if (hadFocus) stopButton.focus();
    write(`msg="started" isolates=${ISOLATES} windowMs=${AGGREGATOR.windowMs} windows=${AGGREGATOR.windows} maxStepFactor=${BOOK.maxStepFactor} fallbackMs=${FALLBACK_MS}`);
    status.textContent = `Running: ${ISOLATES} isolates, ${CALLS} calls per bucket each every ${STEP_MS / 1000} simulated seconds; the upstream's latency is × ${scale}.`;
    // Before any table: what each isolate serves its first calls (the fallback, with a warning).
    for (const iso of r.isolates) iso.served = BUCKETS.map((b) => iso.book.timeout(b.name, { fallbackMs: FALLBACK_MS }));
    draw(r, Math.floor(r.t / AGGREGATOR.windowMs), { buckets: {} }, scale);
    schedule(r);
  }

  function schedule(r) {
    r.timer = setTimeout(() => {
      r.timer = undefined;
      r.inFlight = step(r).then(
        () => {
          if (!r.stopped) schedule(r);
        },
        (error) => {
          r.write(`msg="step failed" error="${error?.message ?? error}"`);
          stop();
        },
      );
    }, TICK_MS);
  }

  async function step(r) {
    r.t += STEP_MS;
    r.step++;
    const index = Math.floor(r.t / AGGREGATOR.windowMs);
    let byBucket = r.samples.get(index);
    if (!byBucket) r.samples.set(index, (byBucket = BUCKETS.map(() => [])));
    const k = scale;
    // Record: every isolate its own calls.
    for (const iso of r.isolates) {
      for (let j = 0; j < BUCKETS.length; j++) {
        const b = BUCKETS[j];
        for (let c = 0; c < CALLS; c++) {
          const v = r.draw(b) * k;
          iso.book.record(b.name, v);
          byBucket[j].push(v);
        }
        iso.calls += CALLS;
      }
    }
    // Flush (concurrently, as isolates do), then read the table back.
    const flushed = await Promise.all(r.isolates.map((iso) => iso.book.flush()));
    flushed.forEach((f, i) => (r.isolates[i].sent += f.sent));
    await Promise.all(r.isolates.map((iso) => iso.book.refresh()));
    if (r.stopped) return;
    for (const iso of r.isolates) iso.served = BUCKETS.map((b) => iso.book.timeout(b.name, { fallbackMs: FALLBACK_MS }));
    const table = await r.agg.table();
    // Forget windows the aggregator no longer keeps.
    for (const w of r.samples.keys()) if (w <= index - AGGREGATOR.windows) r.samples.delete(w);
    draw(r, index, table, k);
  }

  /** The exact p99 × safety over the span the aggregator derives from at window `index`. */
  function exact(r, index, j) {
    const needed = Math.ceil(SAMPLES_BEYOND / (1 - AGGREGATOR.q));
    const all = [];
    for (let w = index; w > index - AGGREGATOR.windows; w--) {
      if (w < index - 1 && all.length >= needed) break;
      const s = r.samples.get(w);
      if (s) all.push(...s[j]);
    }
    const q = exactQuantile(all, AGGREGATOR.q);
    return q === undefined ? undefined : q * AGGREGATOR.safety;
  }

  function draw(r, index, table, k) {
    const h = r.history;
    const minutes = (r.t - EPOCH) / 60_000;
    h.x.push(minutes);
    h.scale.push(k);
    const rows = BUCKETS.map((b, j) => {
      const served = r.isolates.map((iso) => iso.served[j]);
      const row = table.buckets?.[b.name];
      const e = exact(r, index, j);
      h[`served${j}`].push(served[0]);
      h[`exact${j}`].push(e ?? null);
      h[`n${j}`].push(row?.n ?? 0);
      return { name: b.name, served, exact: e, derived: row?.timeoutMs ?? null, n: row?.n ?? 0, warnings: (row?.warnings ?? []).map((w) => w.code ?? String(w)) };
    });
    if (h.x.length > HISTORY) for (const key of Object.keys(h)) h[key].splice(0, h.x.length - HISTORY);
    chart ??= fleetChart(chartEl, BUCKETS);
    chart.update({ ...h, spanMin: SPAN_MIN });

    rowsBody.replaceChildren(
      ...rows.map((row) =>
        el(
          "tr",
          { dataset: { bucket: row.name } },
          el("th", { scope: "row" }, row.name),
          el("td", { className: "n" }, row.n.toLocaleString("en-US")),
          el("td", { className: "exact" }, ms(row.exact)),
          el("td", { className: "derived" }, ms(row.derived ?? undefined)),
          el("td", { className: "served" }, ms(row.served[0])),
          el("td", { className: "fallback" }, String(row.served.filter((v) => v === FALLBACK_MS).length)),
          el("td", { className: "warn" }, row.warnings.join(", ")),
        ),
      ),
    );
    for (const iso of r.isolates) {
      const tr = isolatesBody.querySelector(`tr[data-isolate="${iso.id}"]`);
      tr.querySelector(".calls").textContent = iso.calls.toLocaleString("en-US");
      tr.querySelector(".sent").textContent = iso.sent.toLocaleString("en-US");
      BUCKETS.forEach((_, j) => (tr.querySelector(`.served${j}`).textContent = ms(iso.served[j])));
    }
    section.dataset.steps = String(r.step);
    section.dataset.state = JSON.stringify({ step: r.step, minutes, scale: k, buckets: rows });
    section.dataset.history = JSON.stringify({ scale: h.scale, served: BUCKETS.map((_, j) => h[`served${j}`]), n: BUCKETS.map((_, j) => h[`n${j}`]), exact: BUCKETS.map((_, j) => h[`exact${j}`]) });
    chartEl.setAttribute(
      "aria-label",
      `${chartLabel} At ${minutes.toFixed(1)} simulated minutes, latency × ${k}: ` + rows.map((row) => `${row.name} serves ${ms(row.served[0])} (exact p99 × ${AGGREGATOR.safety}: ${ms(row.exact)})`).join("; ") + ".",
    );
  }

  async function stop() {
    const r = run;
    if (!r || r.stopped) return;
    r.stopped = true;
    clearTimeout(r.timer);
    r.timer = undefined;
    section.dataset.runState = "stopping";
    stopButton.disabled = true;
    await r.inFlight.catch(() => {});
    r.write(`msg="stopped" steps=${r.step} warnings=${r.warnings}`);
    status.textContent = `Stopped after ${((r.t - EPOCH) / 60_000).toFixed(1)} simulated minutes (${r.step} refreshes per isolate).`;
    run = undefined;
    const hadFocus = document.activeElement === stopButton || document.activeElement === document.body;
    startButton.disabled = false;
    if (hadFocus) startButton.focus();
    section.dataset.runState = "stopped";
  }

  function setScale(next) {
    scale = next;
    for (const b of shiftButtons) b.setAttribute("aria-pressed", String(Number(b.dataset.fleetScale) === scale));
    section.dataset.scale = String(scale);
    run?.write(`upstream msg="latency × ${scale}"`);
    status.textContent = `The upstream's latency is now × ${scale}${run ? "" : " (for the next run)"}.`;
  }

  $("#fleet-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!run) start();
  });
  stopButton.addEventListener("click", () => stop());
  for (const b of shiftButtons) b.addEventListener("click", () => setScale(Number(b.dataset.fleetScale)));
}
