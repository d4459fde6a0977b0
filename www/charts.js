// The two charts of section 3, on uPlot (canvas; log axes built in). The
// tables next to them carry the same numbers for screen readers.
import uPlot from "./vendor/uplot/uPlot.esm.js";

const FONT = "12px system-ui, sans-serif";
const AXIS = { stroke: "#1a1a1a", grid: { stroke: "#e3e6ea", width: 1 }, ticks: { stroke: "#c9ced6", width: 1 }, font: FONT, labelFont: FONT };

/** "40", "1k", "1.5k", "12k" for log-axis ticks in ms. */
const tick = (v) => (v == null ? "" : v >= 1000 ? `${+(v / 1000).toPrecision(3)}k` : `${+v.toPrecision(3)}`);

/** Log axes: ticks, labels and grid lines at 1, 2 and 5 × 10^k only. */
const fewer = (_, splits) => splits.map((v) => (v > 0 && [1, 2, 5].includes(Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9))) ? v : null));

/** A log range widened to 1, 2 or 5 × 10^k at both ends, so the ticks land on round numbers. */
function decades(lo, hi) {
  const steps = (v) => [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(v)));
  return [steps(lo).filter((s) => s <= lo * (1 + 1e-9)).pop(), steps(hi).find((s) => s >= hi * (1 - 1e-9))];
}

/** Keeps a chart as wide as its container. */
function follow(container, u, height) {
  const ro = new ResizeObserver(() => {
    const width = Math.max(200, Math.floor(container.clientWidth));
    if (Math.abs(width - u.width) > 1) u.setSize({ width, height });
  });
  ro.observe(container);
}

/**
 * A latency histogram on log axes with vertical marker lines.
 * `update({ bins: [{ lo, hi, count }], markers: [{ label, ms, color, dash?, width? }] })`
 */
export function histogramChart(container) {
  const height = 280;
  let bins = [];
  let markers = [];

  const barsPath = (u, seriesIdx, i0, i1) => {
    const fill = new Path2D();
    const bottom = u.bbox.top + u.bbox.height;
    for (let i = i0; i <= i1; i++) {
      const b = bins[i];
      if (!b || !(b.count > 0)) continue;
      const x0 = u.valToPos(b.lo, "x", true);
      const x1 = u.valToPos(b.hi, "x", true);
      const y = u.valToPos(b.count, "y", true);
      fill.rect(x0, y, Math.max(1, x1 - x0 - 1), bottom - y);
    }
    return { stroke: fill, fill };
  };

  const drawMarkers = (u) => {
    const { ctx } = u;
    const pr = uPlot.pxRatio;
    const { left, top, width, height: h } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, h);
    ctx.clip();
    ctx.font = `${12 * pr}px system-ui, sans-serif`;
    ctx.textBaseline = "top";
    ctx.textAlign = "left"; // uPlot leaves the last axis' alignment set
    const rowsEnd = []; // per label row, where its last label ends
    for (const m of [...markers].sort((a, b) => a.ms - b.ms)) {
      const x = u.valToPos(m.ms, "x", true);
      if (!(x >= left && x <= left + width)) continue;
      ctx.strokeStyle = m.color;
      ctx.lineWidth = (m.width ?? 1.5) * pr;
      ctx.setLineDash(m.dash ? m.dash.map((d) => d * pr) : []);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + h);
      ctx.stroke();
      const text = m.label;
      const w = ctx.measureText(text).width + 6 * pr;
      const flip = x + w > left + width; // near the right edge: label on the left of the line
      const x0 = flip ? x - w : x;
      let row = rowsEnd.findIndex((end) => end < x0);
      if (row < 0) row = rowsEnd.length;
      rowsEnd[row] = x0 + w;
      const y = top + (4 + row * 16) * pr;
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(x0 + 1 * pr, y - 1 * pr, w - 2 * pr, 15 * pr);
      ctx.fillStyle = m.color;
      ctx.fillText(text, x0 + 3 * pr, y);
    }
    ctx.restore();
  };

  const u = new uPlot(
    {
      width: Math.max(200, container.clientWidth),
      height,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: {
        x: { time: false, distr: 3, log: 10, range: () => xRange() },
        y: { distr: 3, log: 10, range: () => yRange() },
      },
      axes: [
        { ...AXIS, label: "latency (ms, log)", filter: fewer, values: (_, splits) => splits.map(tick) },
        { ...AXIS, label: "calls per bin (log)", size: 56, filter: fewer, values: (_, splits) => splits.map(tick) },
      ],
      series: [{}, { label: "calls", stroke: "#5b8fc9", fill: "#9cc0e8", paths: barsPath, points: { show: false } }],
      hooks: { draw: [drawMarkers] },
    },
    [[], []],
    container,
  );
  follow(container, u, height);

  function xRange() {
    const xs = [...bins.flatMap((b) => [b.lo, b.hi]), ...markers.map((m) => m.ms)].filter((v) => v > 0 && Number.isFinite(v));
    if (!xs.length) return [1, 1000];
    return decades(Math.min(...xs) / 1.2, Math.max(...xs) * 1.2);
  }
  function yRange() {
    const max = Math.max(1, ...bins.map((b) => b.count || 0));
    return [0.7, 10 ** Math.ceil(Math.log10(max * 2.5))];
  }

  return {
    update(next) {
      bins = next.bins;
      markers = next.markers;
      // x: geometric bin centres (sorted); y: counts, null for empty bins (a log axis has no 0).
      u.setData([bins.map((b) => Math.sqrt(b.lo * b.hi)), bins.map((b) => (b.count > 0 ? b.count : null))]);
    },
  };
}

/**
 * Per-attempt timeout against what it costs: end-to-end p99.9 (left axis,
 * solid) and the share of calls that fail (right axis, dashed), waiting
 * (no retry) versus one retry. `update([timeouts, p999Wait, p999Retry, failWait, failRetry])`
 */
export function simChart(container) {
  const height = 260;
  const msValue = (_, v) => (v == null ? "–" : `${Math.round(v)} ms`);
  const pctValue = (_, v) => (v == null ? "0" : `${+(v * 100).toPrecision(2)}%`);
  const u = new uPlot(
    {
      width: Math.max(200, container.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: false, distr: 3, log: 10, range: (_, lo, hi) => decades(lo, hi) },
        ms: { distr: 3, log: 10, range: (_, lo, hi) => decades(lo, hi) },
        share: { distr: 3, log: 10, range: (_, lo, hi) => decades(Math.max(lo, 1e-6), 1) },
      },
      axes: [
        { ...AXIS, label: "per-attempt timeout (ms, log)", filter: fewer, values: (_, s) => s.map(tick) },
        { ...AXIS, scale: "ms", label: "end-to-end p99.9 (ms)", size: 56, filter: fewer, values: (_, s) => s.map(tick) },
        { ...AXIS, scale: "share", side: 1, label: "calls failed", size: 60, grid: { show: false }, filter: fewer, values: (_, s) => s.map((v) => (v == null ? "" : `${+(v * 100).toPrecision(1)}%`)) },
      ],
      series: [
        { label: "timeout", value: msValue },
        { label: "p99.9, wait", scale: "ms", stroke: "#a1150e", width: 2, points: { size: 5 }, value: msValue },
        { label: "p99.9, one retry", scale: "ms", stroke: "#0a7d5a", width: 2, points: { size: 5 }, value: msValue },
        { label: "failed, wait", scale: "share", stroke: "#a1150e", width: 1.5, dash: [5, 4], points: { show: false }, value: pctValue },
        { label: "failed, one retry", scale: "share", stroke: "#0a7d5a", width: 1.5, dash: [5, 4], points: { show: false }, value: pctValue },
      ],
    },
    [[], [], [], [], []],
    container,
  );
  follow(container, u, height);
  // A log axis has no 0: a policy that failed nothing is left out of its line.
  return { update: ([x, a, b, c, d]) => u.setData([x, a, b, c.map((v) => (v > 0 ? v : null)), d.map((v) => (v > 0 ? v : null))]) };
}

/** The breaker's states as the overload chart shades them (closed: no band). */
export const BREAKER_BANDS = { open: { fill: "rgba(161, 21, 14, 0.13)", text: "#a1150e" }, "half-open": { fill: "rgba(163, 82, 0, 0.18)", text: "#7a4a00" } };

/**
 * The overload section's live chart: seconds on x; the limit (a step line)
 * and the calls in flight on the left axis; the upstream round trip and the
 * budget (dashed) in ms on the right; the breaker's open and half-open
 * spells as labelled bands behind them.
 * `update({ x, limit, inFlight, rtt, budget, bands: [{ from, to, state }], spanS })`
 */
export function overloadChart(container) {
  const height = 260;
  let bands = [];
  let span = [0, 30];

  const drawBands = (u) => {
    const { ctx } = u;
    const pr = uPlot.pxRatio;
    const { left, top, width, height: h } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, h);
    ctx.clip();
    ctx.font = `${11 * pr}px system-ui, sans-serif`;
    ctx.textBaseline = "top";
    ctx.textAlign = "left";
    for (const b of bands) {
      const style = BREAKER_BANDS[b.state];
      if (!style) continue;
      const x0 = Math.max(left, u.valToPos(b.from, "x", true));
      const x1 = Math.min(left + width, u.valToPos(b.to, "x", true));
      if (!(x1 > x0)) continue;
      ctx.fillStyle = style.fill;
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
      const label = b.state;
      if (ctx.measureText(label).width + 6 * pr <= x1 - x0) {
        ctx.fillStyle = style.text;
        ctx.fillText(label, x0 + 3 * pr, top + 3 * pr);
      }
    }
    ctx.restore();
  };

  const count = (_, v) => (v == null ? "–" : String(Math.round(v)));
  const msValue = (_, v) => (v == null ? "–" : `${Math.round(v)} ms`);
  const u = new uPlot(
    {
      width: Math.max(200, container.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: false, range: () => span },
        calls: { range: (_, lo, hi) => [0, Math.max(10, Math.ceil((hi ?? 0) * 1.15))] },
        ms: { range: (_, lo, hi) => [0, Math.max(50, Math.ceil((hi ?? 0) * 1.15))] },
      },
      axes: [
        { ...AXIS, label: "time since start (s)", values: (_, s) => s.map((v) => (v == null ? "" : `${+v.toFixed(1)}`)) },
        { ...AXIS, scale: "calls", label: "calls", size: 48 },
        { ...AXIS, scale: "ms", side: 1, label: "round trip (ms)", size: 56, grid: { show: false } },
      ],
      series: [
        { label: "t (s)", value: (_, v) => (v == null ? "–" : `${v.toFixed(2)} s`) },
        { label: "limit", scale: "calls", stroke: "#0b5cad", width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, value: count },
        { label: "in flight", scale: "calls", stroke: "#0a7d5a", width: 1.5, points: { show: false }, value: count },
        { label: "round trip, mean", scale: "ms", stroke: "#6b4fbb", width: 1.5, points: { show: false }, spanGaps: false, value: msValue },
        { label: "budget", scale: "ms", stroke: "#4d4d4d", width: 1, dash: [5, 4], points: { show: false }, value: msValue },
      ],
      hooks: { drawClear: [drawBands] },
    },
    [[], [], [], [], []],
    container,
  );
  follow(container, u, height);
  return {
    update(next) {
      bands = next.bands;
      const end = next.x.length ? next.x[next.x.length - 1] : 0;
      span = end <= next.spanS ? [0, next.spanS] : [end - next.spanS, end];
      u.setData([next.x, next.limit, next.inFlight, next.rtt, next.budget]);
    },
  };
}

/**
 * The fleet section's chart: simulated minutes on x; per bucket, the timeout
 * the isolates serve (solid) and the exact p99 × safety of the span the
 * aggregator derives from (dashed), on a log axis; shaded where the
 * upstream's latency was raised.
 * `update({ x, scale, served0, exact0, served1, exact1, …, spanMin })`
 */
export function fleetChart(container, buckets) {
  const height = 260;
  let shaded = [];
  let span = [0, 30];

  const drawShift = (u) => {
    const { ctx } = u;
    const pr = uPlot.pxRatio;
    const { left, top, width, height: h } = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, h);
    ctx.clip();
    ctx.font = `${11 * pr}px system-ui, sans-serif`;
    ctx.textBaseline = "top";
    ctx.textAlign = "left";
    for (const b of shaded) {
      const x0 = Math.max(left, u.valToPos(b.from, "x", true));
      const x1 = Math.min(left + width, u.valToPos(b.to, "x", true));
      if (!(x1 > x0)) continue;
      ctx.fillStyle = BREAKER_BANDS["half-open"].fill;
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
      const label = `latency × ${b.scale}`;
      if (ctx.measureText(label).width + 6 * pr <= x1 - x0) {
        ctx.fillStyle = BREAKER_BANDS["half-open"].text;
        ctx.fillText(label, x0 + 3 * pr, top + 3 * pr);
      }
    }
    ctx.restore();
  };

  const msValue = (_, v) => (v == null ? "–" : `${Math.round(v)} ms`);
  const u = new uPlot(
    {
      width: Math.max(200, container.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: false, range: () => span },
        ms: { distr: 3, log: 10, range: (_, lo, hi) => decades(Math.max(1, (lo ?? 10) / 1.2), Math.max(2, (hi ?? 1000) * 1.2)) },
      },
      axes: [
        { ...AXIS, label: "simulated time (min)", values: (_, s) => s.map((v) => (v == null ? "" : `${+v.toFixed(1)}`)) },
        { ...AXIS, scale: "ms", label: "timeout (ms, log)", size: 56, filter: fewer, values: (_, s) => s.map(tick) },
      ],
      series: [
        { label: "t (min)", value: (_, v) => (v == null ? "–" : `${v.toFixed(2)} min`) },
        ...buckets.flatMap((b) => [
          { label: `${b.name} served`, scale: "ms", stroke: b.color, width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, value: msValue },
          { label: `${b.name} exact p99 × safety`, scale: "ms", stroke: b.color, width: 1, dash: [5, 4], points: { show: false }, value: msValue },
        ]),
      ],
      hooks: { drawClear: [drawShift] },
    },
    [[], ...buckets.flatMap(() => [[], []])],
    container,
  );
  follow(container, u, height);
  return {
    update(next) {
      const end = next.x.length ? next.x[next.x.length - 1] : 0;
      span = end <= next.spanMin ? [0, next.spanMin] : [end - next.spanMin, end];
      shaded = [];
      for (let i = 0; i < next.x.length; i++) {
        if (next.scale[i] === 1) continue;
        const last = shaded[shaded.length - 1];
        const from = i > 0 ? next.x[i - 1] : next.x[i];
        if (last && last.to === from && last.scale === next.scale[i]) last.to = next.x[i];
        else shaded.push({ from, to: next.x[i], scale: next.scale[i] });
      }
      u.setData([next.x, ...buckets.flatMap((_, j) => [next[`served${j}`], next[`exact${j}`]])]);
    },
  };
}
