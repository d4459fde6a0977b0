// Section 2, the stalled stream: the simulated token stream (token-stream.js)
// read through `withStallTimeout(stream, { firstChunkMs, stallMs, controller })`.
// The countdowns are the page's view of the two limits; the verdict (when,
// which phase, what to abort) is the package's.
import { isStreamStalled, withStallTimeout } from "./pkg/index.js";
import { $, describeError, el, logLine, ms, num } from "./dom.js";
import { tokenStream } from "./token-stream.js";

const SCENARIOS = {
  healthy: { tokens: 30, firstMs: 300, everyMs: 60, stallAfter: 0, stallForMs: 0 },
  pause: { tokens: 30, firstMs: 300, everyMs: 60, stallAfter: 12, stallForMs: 300 },
  mid: { tokens: 40, firstMs: 300, everyMs: 60, stallAfter: 12, stallForMs: 0 },
  never: { tokens: 40, firstMs: 60_000, everyMs: 60, stallAfter: 0, stallForMs: 0 },
};

export function mountStall() {
  const section = $("#stall");
  const form = $("#stall-form");
  const f = {
    firstChunkMs: $("#first-chunk-ms"),
    stallMs: $("#stall-ms"),
    tokens: $("#tok-count"),
    firstMs: $("#tok-first"),
    everyMs: $("#tok-every"),
    stallAfter: $("#tok-stall-after"),
    stallForMs: $("#tok-stall-for"),
  };
  const runButton = $("#stall-run");
  const stopButton = $("#stall-stop");
  const scenarioButtons = [...section.querySelectorAll("[data-stall-scenario]")];
  const cdFirst = $("#cd-first");
  const cdFirstBar = $("#cd-first-bar");
  const cdStall = $("#cd-stall");
  const cdStallBar = $("#cd-stall-bar");
  const upstreamState = $("#upstream-state");
  const tokensEl = $("#tokens");
  const status = $("#stall-status");
  const table = $("#stalled-fields");
  const log = $("#stall-log");
  let current;

  function fill(name) {
    for (const [k, v] of Object.entries(SCENARIOS[name])) f[k].value = String(v);
  }

  async function start() {
    const limits = { firstChunkMs: num(f.firstChunkMs, 1000), stallMs: num(f.stallMs, 500) };
    const plan = {
      tokens: Math.max(1, Math.round(num(f.tokens, 40))),
      firstMs: Math.max(0, num(f.firstMs, 300)),
      everyMs: Math.max(0, num(f.everyMs, 60)),
      stallAfter: Math.max(0, Math.round(num(f.stallAfter, 0))),
      stallForMs: Math.max(0, num(f.stallForMs, 0)),
    };
    const t0 = performance.now();
    const at = () => performance.now() - t0;
    const write = (line) => logLine(log, `t=+${String(Math.round(at())).padStart(5, "0")}ms ${line}`);
    const run = { firstAt: null, lastAt: null, done: false, verdict: null };
    current = run;

    log.textContent = "";
    tokensEl.textContent = "";
    status.textContent = "";
    status.className = "response";
    table.hidden = true;
    section.dataset.runState = "running";
    section.dataset.runs = String(Number(section.dataset.runs ?? 0) + 1);
    for (const k of ["outcome", "phase", "upstream", "sourceCancelled"]) delete section.dataset[k];
    // The button that started the run is disabled while it runs: keep keyboard focus on the page.
    const returnFocus = document.activeElement;
    const hadFocus = returnFocus === runButton || scenarioButtons.includes(returnFocus);
    for (const b of [runButton, ...scenarioButtons]) b.disabled = true;
    stopButton.disabled = false;
    if (hadFocus) stopButton.focus();
    upstreamState.textContent = "open, streaming";

    // The upstream request: its controller is what withStallTimeout aborts.
    const upstream = new AbortController();
    const source = tokenStream(plan, upstream.signal, {
      onAbort: (reason) => {
        section.dataset.upstream = "aborted";
        upstreamState.textContent = `aborted (${reason?.name ?? "reason"})`;
        write(`upstream msg="request aborted, producer stopped" reason="${describeError(reason)}"`);
      },
      onCancel: (reason) => {
        section.dataset.sourceCancelled = "yes";
        write(`upstream msg="body cancelled" reason="${describeError(reason)}"`);
      },
      onQuiet: (forMs) => write(`upstream msg="goes quiet" for=${forMs === 0 ? "good (connection left open)" : `${forMs}ms`}`),
    });
    write(`msg="stream opened" firstChunkMs=${limits.firstChunkMs} stallMs=${limits.stallMs}`);
    let reader;
    try {
      reader = withStallTimeout(source, { ...limits, controller: upstream }).getReader();
    } catch (e) {
      // Bad limits are a RangeError / TypeError from the package, shown as they are.
      upstream.abort(e);
      return finish("invalid", e);
    }
    run.stop = () => {
      write(`consumer msg="stops reading"`);
      // Settles once the cancel has reached the source (and the upstream's controller).
      run.cancelled = reader.cancel(new DOMException("the reader stopped reading", "AbortError"));
    };

    const frame = () => {
      if (run.done) return;
      const t = at();
      if (run.firstAt === null) {
        const left = limits.firstChunkMs - t;
        cdFirst.textContent = ms(Math.max(0, left));
        bar(cdFirstBar, left / limits.firstChunkMs);
        cdStall.textContent = `${ms(limits.stallMs)} once it starts`;
        bar(cdStallBar, 1);
      } else {
        const left = limits.stallMs - (t - run.lastAt);
        cdStall.textContent = ms(Math.max(0, left));
        bar(cdStallBar, left / limits.stallMs);
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);

    let chunks = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const t = at();
        if (run.firstAt === null) {
          run.firstAt = t;
          cdFirst.textContent = `met after ${ms(t)}`;
          bar(cdFirstBar, 0);
          write(`msg="first chunk" after_ms=${Math.round(t)}`);
        }
        run.lastAt = t;
        chunks++;
        tokensEl.append(value);
      }
      if (run.cancelled) {
        await run.cancelled;
        return finish("cancelled", undefined, chunks);
      }
      return finish("complete", undefined, chunks);
    } catch (e) {
      return finish(isStreamStalled(e) ? "stalled" : "error", e, chunks, upstream);
    }

    function finish(outcome, error, n = 0, up = upstream) {
      run.done = true;
      current = undefined;
      for (const b of [runButton, ...scenarioButtons]) b.disabled = false;
      if (hadFocus && (document.activeElement === stopButton || document.activeElement === document.body)) returnFocus.focus();
      stopButton.disabled = true;
      if (!up.signal.aborted) {
        section.dataset.upstream = outcome === "complete" ? "closed" : "open";
        upstreamState.textContent = outcome === "complete" ? "finished normally (nothing aborted)" : "open";
      }
      if (outcome === "complete") {
        cdStall.textContent = "stream complete";
        bar(cdStallBar, 0);
        status.textContent = `Complete: ${n} tokens in ${ms(at())}; no limit expired and nothing was aborted.`;
        status.className = "response ok";
        write(`msg="stream complete" chunks=${n}`);
      } else if (outcome === "stalled") {
        if (error.phase === "first-chunk") cdFirst.textContent = "expired";
        else cdStall.textContent = "expired";
        section.dataset.phase = error.phase;
        tokensEl.append(el("span", { className: "cut" }, "▌ cut: the stream stalled"));
        const same = up.signal.aborted && up.signal.reason === error;
        status.textContent = `StreamStalled (${error.phase}) after ${ms(error.afterMs)} of silence: the upstream request was ${up.signal.aborted ? "aborted" : "NOT aborted"}${same ? " with the same error" : ""}, and the ${n} tokens that arrived are kept, marked partial.`;
        status.className = "response bad";
        showFields(error, up.signal);
        write(`msg="stream stalled" phase=${error.phase} after_ms=${Math.round(error.afterMs)} chunks=${error.chunks} bytes=${error.bytes}`);
      } else if (outcome === "cancelled") {
        status.textContent = `Stopped by the reader after ${n} tokens: the cancel reached the source and the upstream request (${up.signal.aborted ? "aborted" : "not aborted"}).`;
        status.className = "response fallback";
      } else {
        status.textContent = `${outcome === "invalid" ? "Could not start" : "The stream failed"}: ${describeError(error)}`;
        status.className = "response bad";
      }
      section.dataset.outcome = outcome;
      section.dataset.runState = "done";
    }
  }

  function showFields(error, signal) {
    const rows = [
      ["name", error.name],
      ["isStreamStalled(error)", String(isStreamStalled(error))],
      ["phase", error.phase],
      ["afterMs", error.afterMs.toFixed(1)],
      ["chunks", String(error.chunks)],
      ["bytes", String(error.bytes)],
      ["message", error.message],
      ["controller.signal.aborted", String(signal.aborted)],
      ["controller.signal.reason === error", String(signal.reason === error)],
    ];
    table.tBodies[0].replaceChildren(...rows.map(([k, v]) => el("tr", { dataset: { field: k } }, el("th", { scope: "row" }, k), el("td", {}, v))));
    table.hidden = false;
  }

  const bar = (node, frac) => {
    const f = Math.max(0, Math.min(1, frac));
    node.style.width = `${100 * f}%`;
    node.classList.toggle("low", f < 0.25);
  };

  for (const b of scenarioButtons) {
    b.addEventListener("click", () => {
      if (current) return;
      fill(b.dataset.stallScenario);
      start();
    });
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!current) start();
  });
  stopButton.addEventListener("click", () => current?.stop?.());
}
