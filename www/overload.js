// Section 4, overload control: a load generator sends requests, each with its
// own `Deadline`, through `limiter.run(fn, { deadline })` of an adaptive
// `ConcurrencyLimiter` and `breaker.run(key, fn)` of a `CircuitBreaker` to the
// simulated upstream (upstream.js). Every request that does not get the
// upstream's answer gets a fallback, counted by why: shed (`Overloaded`),
// refused (`CircuitOpen`), out of time (`DeadlineExceeded`) or an upstream error.
// The limit, the calls in flight and the breaker's state drawn are read from
// the package's objects as they run; the page decides nothing of them.
//
// Everything a run arms (two intervals, the requests' deadlines and the
// upstream's timers) ends with Stop: the intervals are cleared, every
// request's deadline is aborted through its parent signal, the run waits for
// the requests to settle, then disposes the breaker.
import { Deadline, isTimeout } from "./pkg/index.js";
import { CircuitBreaker, ConcurrencyLimiter, isCircuitOpen, isOverloaded } from "./pkg/derive-index.js";
import { overloadChart } from "./charts.js";
import { $, describeError, logLine, ms, num } from "./dom.js";
import { Upstream, UpstreamError } from "./upstream.js";

const KEY = "upstream";
/** Sampling and drawing period. */
const TICK_MS = 250;
/** The load generator's period: each tick sends what the rate owes since the last. */
const LOAD_TICK_MS = 20;
/** Seconds of history drawn. */
const SPAN_S = 30;
/**
 * Demo-scale options: windows of 250 ms (the default 1 s is slow to watch), a
 * floor of 2 so the limit can fall far, a queue of 4 decided by each
 * request's remaining budget; AIMD's target round trip 100 ms (5 × the
 * healthy service time); Gradient2's baseline probe over 20 calls.
 */
const LIMITER = { initialLimit: 20, minLimit: 2, maxLimit: 64, windowMs: 250, windowSize: 10, maxQueue: 4, timeoutMs: 100, probeSamples: 20 };
/**
 * Judges the calls of the last 3 s (at least 20): opens when half of them
 * failed or 90% were slow (over 100 ms, 5 × the healthy service time), so a
 * slowdown first meets the limiter, then the breaker if it lasts. Stays open
 * 2 s, then lets one probe through; a slow probe opens it again.
 */
const BREAKER = { consecutiveFailures: 0, failureRate: 0.5, slowCallRate: 0.9, slowCallMs: 100, windowMs: 3_000, minimumCalls: 20, openMs: 2_000 };
const REASONS = ["shed", "circuit", "deadline", "error"];
const MODES = { healthy: "healthy", slow: "latency × 10", failing: "failing (503)" };

export function mountOverload() {
  const section = $("#overload");
  const form = $("#overload-form");
  const f = {
    algorithm: $("#ol-algorithm"),
    rate: $("#ol-rate"),
    budget: $("#ol-budget"),
    servers: $("#ol-servers"),
    service: $("#ol-service"),
  };
  const startButton = $("#ol-start");
  const stopButton = $("#ol-stop");
  const modeButtons = [...section.querySelectorAll("[data-upstream-mode]")];
  const status = $("#overload-status");
  const log = $("#overload-log");
  const chartEl = $("#overload-chart");
  const chartLabel = chartEl.getAttribute("aria-label");
  // Made at the first draw (a run's first tick): an empty chart built at load cost the page ~20 ms.
  let chart;
  const out = Object.fromEntries(
    ["state", "limit", "inflight", "queued", "window", "answered", "shed", "circuit", "deadline", "error"].map((k) => [k, $(`#ol-${k}`)]),
  );

  let mode = "healthy";
  /** The run going on, or undefined. */
  let run;

  const rate = () => Math.min(1_000, Math.max(0, num(f.rate, 100)));
  const budgetMs = () => Math.min(10_000, Math.max(1, num(f.budget, 300)));
  const config = {
    get servers() {
      return Math.min(256, Math.max(1, Math.round(num(f.servers, 8))));
    },
    get serviceMs() {
      return Math.min(5_000, Math.max(0.1, num(f.service, 20)));
    },
  };

  function start() {
    const algorithm = f.algorithm.value === "aimd" ? "aimd" : "gradient2";
    const t0 = performance.now();
    const r = {
      t0,
      at: () => (performance.now() - t0) / 1000,
      stopped: false,
      stop: new AbortController(),
      pending: new Set(),
      counts: { answered: 0, shed: 0, circuit: 0, deadline: 0, error: 0 },
      // What the chart draws; the round trips of the calls that ended in the current tick.
      series: { x: [], limit: [], inFlight: [], rtt: [], budget: [] },
      rttSum: 0,
      rttN: 0,
      /** The breaker's state changes since the start, for the bands: [{ t, to }]. */
      changes: [{ t: 0, to: "closed" }],
      opens: 0,
      due: 0,
      last: t0,
    };
    const write = (line) => logLine(log, `t=${r.at().toFixed(2)}s ${line}`);
    r.write = write;
    r.limiter = new ConcurrencyLimiter({ limit: algorithm, ...LIMITER });
    r.breaker = new CircuitBreaker({
      ...BREAKER,
      onStateChange: (e) => {
        const t = (e.at - t0) / 1000;
        r.changes.push({ t, to: e.to });
        if (e.to === "open") r.opens++;
        write(`breaker key=${e.key} ${e.from} → ${e.to}${e.reason ? ` reason=${e.reason}` : ""}`);
        section.dataset.breakerOpens = String(r.opens);
      },
    });
    r.upstream = new Upstream(config);
    r.upstream.setMode(mode);
    run = r;

    log.textContent = "";
    for (const k of Object.keys(r.counts)) section.dataset[k] = "0";
    section.dataset.breakerOpens = "0";
    section.dataset.ticks = "0";
    section.dataset.algorithm = algorithm;
    section.dataset.runs = String(Number(section.dataset.runs ?? 0) + 1);
    section.dataset.runState = "running";
    delete section.dataset.breaker;
    const hadFocus = document.activeElement === startButton;
    startButton.disabled = true;
    f.algorithm.disabled = true;
    stopButton.disabled = false;
    if (hadFocus) stopButton.focus();
    write(`msg="started" limit=${algorithm} rate=${rate()}/s budget=${budgetMs()}ms upstream=${mode}`);
    status.textContent = `Running: ${rate()} requests/s, ${ms(budgetMs())} budget each, limit "${algorithm}", upstream ${MODES[mode]}.`;

    r.loadTimer = setInterval(() => load(r), LOAD_TICK_MS);
    r.tickTimer = setInterval(() => tick(r), TICK_MS);
    tick(r);
  }

  /** Sends the requests the rate owes since the last tick (at most half a second's worth at once). */
  function load(r) {
    const t = performance.now();
    const perMs = rate() / 1000;
    r.due = Math.min(r.due + (t - r.last) * perMs, Math.max(1, 500 * perMs));
    r.last = t;
    while (r.due >= 1) {
      r.due--;
      request(r);
    }
  }

  function request(r) {
    const d = Deadline.in(budgetMs(), { signal: r.stop.signal });
    const call = () => {
      const t = performance.now();
      return r.upstream.call(d.signal()).finally(() => {
        r.rttSum += performance.now() - t;
        r.rttN++;
      });
    };
    const done = r.limiter
      .run(() => r.breaker.run(KEY, call), { deadline: d })
      .then(
        () => count(r, "answered"),
        (e) => count(r, r.stopped ? undefined : reason(e, r)),
      )
      .finally(() => {
        d.dispose();
        r.pending.delete(done);
      });
    r.pending.add(done);
  }

  /** Why a request got the fallback answer. */
  function reason(e, r) {
    if (isOverloaded(e)) return "shed";
    if (isCircuitOpen(e)) return "circuit";
    if (isTimeout(e)) return "deadline";
    if (!(e instanceof UpstreamError) && !r.unexpected) {
      r.unexpected = true;
      r.write(`msg="unexpected error" error="${describeError(e)}"`);
    }
    return "error";
  }

  function count(r, what) {
    if (what === undefined) return;
    r.counts[what]++;
  }

  /** Samples the limiter and the breaker, and draws. */
  function tick(r) {
    const t = r.at();
    const s = r.series;
    const limiter = r.limiter;
    const state = r.stopped ? "disposed" : r.breaker.state(KEY);
    s.x.push(t);
    s.limit.push(limiter.limit);
    s.inFlight.push(limiter.inFlight);
    s.rtt.push(r.rttN > 0 ? r.rttSum / r.rttN : null);
    s.budget.push(budgetMs());
    r.rttSum = 0;
    r.rttN = 0;
    // Keep a little more than the span drawn.
    const keepFrom = s.x.findIndex((x) => x >= t - SPAN_S - 1);
    if (keepFrom > 0) for (const k of Object.keys(s)) s[k].splice(0, keepFrom);
    const bands = r.changes.map((c, i) => ({ from: c.t, to: r.changes[i + 1]?.t ?? t, state: c.to }));
    chart ??= overloadChart(chartEl);
    chart.update({ ...s, bands, spanS: SPAN_S });

    if (!r.stopped) {
      const w = r.breaker.stats(KEY);
      out.state.textContent = state;
      out.state.className = `state ${state}`;
      out.window.textContent = `${w.calls} calls, ${w.failures} failed, ${w.slowCalls} slow`;
      section.dataset.breakerState = state;
    }
    out.limit.textContent = String(limiter.limit);
    out.inflight.textContent = `${limiter.inFlight} (upstream holds ${r.upstream.inside})`;
    out.queued.textContent = String(limiter.queued);
    for (const k of ["answered", ...REASONS]) {
      out[k].textContent = r.counts[k].toLocaleString("en-US");
      section.dataset[k] = String(r.counts[k]);
    }
    section.dataset.limit = String(limiter.limit);
    section.dataset.ticks = String(Number(section.dataset.ticks) + 1);
    const fallbacks = REASONS.reduce((a, k) => a + r.counts[k], 0);
    chartEl.setAttribute(
      "aria-label",
      `${chartLabel} At ${t.toFixed(1)} s: limit ${limiter.limit}, ${limiter.inFlight} in flight, breaker ${state}` +
        `${r.opens ? ` (opened ${r.opens} times)` : ""}; ${r.counts.answered} answered, ${fallbacks} fallbacks.`,
    );
  }

  async function stop() {
    const r = run;
    if (!r || r.stopped) return;
    r.stopped = true;
    clearInterval(r.loadTimer);
    clearInterval(r.tickTimer);
    section.dataset.runState = "stopping";
    stopButton.disabled = true;
    // Every request's deadline has this signal as its parent: aborting it
    // ends the upstream calls and the callers waiting in the limiter's queue.
    r.stop.abort(new DOMException("the demo was stopped", "AbortError"));
    await Promise.allSettled([...r.pending]);
    const final = r.breaker.state(KEY);
    r.breaker.dispose();
    section.dataset.breaker = "disposed";
    tick(r);
    r.write(`msg="stopped" answered=${r.counts.answered} ${REASONS.map((k) => `${k}=${r.counts[k]}`).join(" ")}`);
    const fallbacks = REASONS.reduce((a, k) => a + r.counts[k], 0);
    status.textContent =
      `Stopped after ${r.at().toFixed(1)} s: ${r.counts.answered.toLocaleString("en-US")} answered, ${fallbacks.toLocaleString("en-US")} fallbacks ` +
      `(${r.counts.shed} shed, ${r.counts.circuit} circuit open, ${r.counts.deadline} deadline, ${r.counts.error} upstream error); the breaker was ${final}.`;
    run = undefined;
    const hadFocus = document.activeElement === stopButton || document.activeElement === document.body;
    startButton.disabled = false;
    f.algorithm.disabled = false;
    if (hadFocus) startButton.focus();
    section.dataset.runState = "stopped";
  }

  function setMode(next) {
    mode = next;
    for (const b of modeButtons) b.setAttribute("aria-pressed", String(b.dataset.upstreamMode === mode));
    section.dataset.mode = mode;
    if (run) {
      run.upstream.setMode(mode);
      run.write(`upstream msg="now ${MODES[mode]}"`);
    }
    status.textContent = `The upstream is now ${MODES[mode]}${run ? "" : " (for the next run)"}.`;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!run) start();
  });
  stopButton.addEventListener("click", () => stop());
  for (const b of modeButtons) b.addEventListener("click", () => setMode(b.dataset.upstreamMode));
  for (const input of [f.servers, f.service]) input.addEventListener("change", () => run?.upstream.refresh());
  section.dataset.mode = mode;
}
