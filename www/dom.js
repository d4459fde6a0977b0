// Small DOM and formatting helpers shared by the sections. Text goes in with
// textContent only: nothing the page shows is parsed as HTML.

export const $ = (selector, root = document) => root.querySelector(selector);

/** `el("td", { className: "x", dataset: { a: "1" } }, "text", child)` */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== undefined && c !== null) node.append(c);
  return node;
}

/** A number input's value, or `fallback` when it is empty or not a number. */
export function num(input, fallback) {
  const v = input.valueAsNumber;
  return Number.isFinite(v) ? v : fallback;
}

/** Milliseconds as a short human figure: "0.42 ms", "38.1 ms", "1 262 ms", "12.3 s". */
export function ms(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  if (v >= 10_000) return `${(v / 1000).toFixed(1)} s`;
  if (v >= 1000) return `${Math.round(v).toLocaleString("en-US").replace(",", " ")} ms`;
  if (v >= 100) return `${Math.round(v)} ms`;
  if (v >= 10) return `${v.toFixed(1)} ms`;
  return `${v.toFixed(2)} ms`;
}

/** A share as a percentage with sensible precision: "1.00%", "0.007%". */
export function pct(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  const p = v * 100;
  if (p === 0) return "0%";
  if (p >= 1) return `${p.toFixed(2)}%`;
  if (p >= 0.1) return `${p.toFixed(2)}%`;
  return `${p.toPrecision(2)}%`;
}

export const badge = (outcome, text = outcome) => el("span", { className: `badge ${outcome}` }, text);

/** Appends one line to a log `<pre>` and keeps it scrolled to the end. */
export function logLine(pre, line) {
  pre.append(`${line}\n`);
  pre.scrollTop = pre.scrollHeight;
}

/** A describable error: name, its fields, message. */
export function describeError(e) {
  if (e === null || typeof e !== "object") return String(e);
  return `${e.name ?? "Error"}: ${e.message}`;
}
