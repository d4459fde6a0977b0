// Section 1, the budget countdown: one edge deadline split by `plan()` between
// auth → retrieval → generation → policy check, with a reserve held for the
// fallback. The stub services wait the delays from the form and
// stop when their AbortSignal fires; generation goes through `retry()`.
// Everything shown (caps, skips, the trace) is what the package decided.
import { Deadline, isRetryFailed, plan, retry } from "./pkg/index.js";
import { $, badge, describeError, el, logLine, ms, num } from "./dom.js";

/** The plan at the default 8 s deadline; every figure scales with the deadline. */
const BASE_MS = 8_000;
const STEPS = [
  { name: "auth", label: "auth", kind: "mandatory", minMs: 100, preferredMs: 1_000 },
  { name: "retrieval", label: "retrieval", kind: "mandatory", minMs: 300, preferredMs: 5_500 },
  { name: "generation", label: "generation", kind: "optional", minMs: 2_000 },
  { name: "policy", label: "policy check", kind: "mandatory", minMs: 200, preferredMs: 500 },
  { name: "fallback", label: "fallback", kind: "fallback", minMs: 500 },
];
/** Stub delays at 8 s (a typical trace: auth 0.5 s, retrieval 1.5 s). */
const FAST = { auth: 500, retrieval: 1_500, generation: 3_000, policy: 300, fallback: 200, failFirst: false, failMs: 400, backoff: 4_000, cancelAt: null };
const SCENARIOS = {
  fast: FAST,
  // Retrieval takes 5 s: what is left after the reserves is below generation's 2 s minimum.
  "slow-retrieval": { ...FAST, retrieval: 5_000 },
  // The first attempt fails fast; its 4 s backoff would leave less than the 2 s an attempt needs.
  retry: { ...FAST, failFirst: true },
  // The user leaves 1.2 s into generation.
  cancel: { ...FAST, cancelAt: 3_200 },
};
const DOCS = ["kb/reset-password.md", "kb/2fa-recovery.md", "kb/account-locked.md"];

export function mountBudget() {
  const section = $("#budget");
  const form = $("#budget-form");
  const slider = $("#deadline");
  const out = $("#deadline-out");
  const inputs = {
    auth: $("#d-auth"),
    retrieval: $("#d-retrieval"),
    generation: $("#d-generation"),
    policy: $("#d-policy"),
    fallback: $("#d-fallback"),
    failFirst: $("#fail-first"),
    failMs: $("#fail-ms"),
    backoff: $("#backoff-ms"),
    cancelAt: $("#cancel-at"),
  };
  const runButton = $("#budget-run");
  const cancelButton = $("#budget-cancel");
  const scenarioButtons = [...section.querySelectorAll("[data-scenario]")];
  const remainingEl = $("#remaining");
  const summary = $("#budget-summary");
  const timeline = $("#timeline");
  const nowMark = $("#timeline-now");
  const reserveEl = $("#timeline-reserve");
  const tbody = $("#steps tbody");
  const response = $("#budget-response");
  const log = $("#budget-log");

  let preset = "fast"; // the scenario the inputs hold (rescaled with the slider), null once edited
  let current; // the request in flight

  const deadlineMs = () => Math.round(num(slider, 8) * 1000);
  const scale = () => deadlineMs() / BASE_MS;

  function fill(name) {
    const s = SCENARIOS[name];
    const k = scale();
    for (const key of ["auth", "retrieval", "generation", "policy", "fallback", "failMs", "backoff"]) inputs[key].value = String(Math.round(s[key] * k));
    inputs.failFirst.checked = s.failFirst;
    inputs.cancelAt.value = s.cancelAt === null ? "" : String(Math.round(s.cancelAt * k));
    preset = name;
  }

  function config() {
    const D = deadlineMs();
    const k = D / BASE_MS;
    const v = (key) => Math.max(0, num(inputs[key], FAST[key] * k));
    return {
      deadlineMs: D,
      steps: STEPS.map((s) => ({ name: s.name, kind: s.kind, minMs: s.minMs * k, ...(s.preferredMs ? { preferredMs: s.preferredMs * k } : {}) })),
      auth: v("auth"),
      retrieval: v("retrieval"),
      generation: v("generation"),
      policy: v("policy"),
      fallback: v("fallback"),
      failFirst: inputs.failFirst.checked,
      failMs: v("failMs"),
      backoff: v("backoff"),
      cancelAt: Number.isFinite(inputs.cancelAt.valueAsNumber) ? Math.max(0, inputs.cancelAt.valueAsNumber) : null,
    };
  }

  // ── the idle picture ───────────────────────────────────────────────────────
  const reserveOf = (steps) => steps.filter((s) => s.kind !== "optional" && s.name !== "auth" && s.name !== "retrieval").reduce((a, s) => a + s.minMs, 0);

  function idle() {
    const D = deadlineMs();
    out.value = `${(D / 1000).toFixed(1)} s`;
    if (current) return;
    remainingEl.textContent = `${(D / 1000).toFixed(3)} s`;
    const steps = config().steps;
    reserveEl.style.width = `${(100 * reserveOf(steps)) / D}%`;
    renderRows(steps);
  }

  function renderRows(steps) {
    tbody.replaceChildren(
      ...steps.map((s, i) =>
        el(
          "tr",
          { dataset: { step: s.name, outcome: "" } },
          el("th", { scope: "row" }, el("i", { className: "swatch", style: `background:var(--s-${s.name})` }), STEPS[i].label),
          el("td", { className: "text" }, s.kind),
          el("td", {}, ms(s.minMs)),
          el("td", { className: "cap" }, "–"),
          el("td", { className: "elapsed" }, "–"),
          el("td", { className: "outcome text" }, "–"),
        ),
      ),
    );
  }

  const legend = $("#timeline-legend");
  legend.replaceChildren(
    ...STEPS.map((s) => el("span", {}, el("i", { style: `background:var(--s-${s.name})` }), s.label)),
    el("span", {}, el("i", { className: "hatch" }), "reserve held for the policy check and the fallback"),
  );

  // ── one request ───────────────────────────────────────────────────────────
  async function runRequest(cfg) {
    const D = cfg.deadlineMs;
    renderRows(cfg.steps);
    const user = new AbortController();
    const edge = Deadline.in(D, { signal: user.signal });
    const t0 = performance.now();
    const at = (t = performance.now()) => t - t0;
    const stamp = () => `t=+${String(Math.round(at())).padStart(5, "0")}ms`;
    const write = (fields) => logLine(log, `${stamp()} ${fields}`);
    const rows = new Map([...tbody.rows].map((tr) => [tr.dataset.step, tr]));
    const segs = new Map();
    const stubEvents = [];
    const run = { user, edge, t0, D, running: null, done: false };
    current = run;

    log.textContent = "";
    summary.textContent = ""; // the last run's outcome is not this run's
    response.textContent = "";
    response.className = "response";
    section.dataset.runState = "running";
    section.dataset.runs = String(Number(section.dataset.runs ?? 0) + 1);
    delete section.dataset.outcome;
    section.dataset.generation = "";
    section.dataset.retry = "";
    section.dataset.stubAborted = "";
    // The button that started the run is disabled while it runs: keep keyboard focus on the page.
    const returnFocus = document.activeElement;
    const hadFocus = returnFocus === runButton || scenarioButtons.includes(returnFocus);
    for (const b of [runButton, ...scenarioButtons]) b.disabled = true;
    cancelButton.disabled = false;
    if (hadFocus) cancelButton.focus();
    for (const s of timeline.querySelectorAll(".seg, .cap")) s.remove();
    reserveEl.style.width = `${(100 * reserveOf(cfg.steps)) / D}%`;
    timeline.setAttribute("aria-label", `Budget timeline of a ${ms(D)} request, running`);
    write(`level=info msg="request accepted" deadline_ms=${D} reserve_ms=${Math.round(reserveOf(cfg.steps))}`);

    /** A stub service: answers after `delayMs` unless its signal aborts first (then it stops). */
    const stub = (name, delayMs, signal, value, error) =>
      new Promise((resolve, reject) => {
        const started = performance.now();
        let timer;
        const onAbort = () => {
          clearTimeout(timer);
          stubEvents.push({ name, afterMs: performance.now() - started });
          section.dataset.stubAborted = stubEvents.map((e) => e.name).join(" ");
          write(`level=info stub=${name} msg="abort observed, work stopped" after_ms=${Math.round(performance.now() - started)} reason="${describeError(signal.reason)}"`);
          reject(signal.reason);
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener("abort", onAbort, { once: true });
        timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          if (error) reject(error);
          else resolve(value);
        }, delayMs);
      });

    const onStep = (rec) => {
      const tr = rows.get(rec.step);
      tr.dataset.outcome = rec.outcome;
      tr.querySelector(".cap").textContent = rec.capMs > 0 ? ms(rec.capMs) : "not started";
      tr.querySelector(".elapsed").textContent = ms(rec.elapsedMs);
      tr.querySelector(".outcome").replaceChildren(badge(rec.outcome));
      const seg = segs.get(rec.step);
      if (seg) seg.el.style.width = `${(100 * rec.elapsedMs) / D}%`;
      if (run.running?.name === rec.step) run.running = null;
      write(
        `level=${rec.outcome === "ok" ? "info" : "warn"} step=${rec.step} outcome=${rec.outcome} cap_ms=${Math.round(rec.capMs)} elapsed_ms=${Math.round(rec.elapsedMs)} remaining_at_start_ms=${Math.round(rec.remainingAtStartMs)}`,
      );
    };
    const p = plan(edge, cfg.steps, { onStep });

    /** Runs one plan step, drawing it while it runs. */
    let stepName = "";
    const step = (name, fn) => {
      stepName = name;
      return p.run(name, (signal, budgetMs) => {
        const start = at();
        const tr = rows.get(name);
        tr.dataset.outcome = "running";
        tr.querySelector(".cap").textContent = ms(budgetMs);
        tr.querySelector(".outcome").replaceChildren(badge("running"));
        const left = `${(100 * start) / D}%`;
        const segEl = el("div", { className: "seg", style: `left:${left};width:0;background:var(--s-${name})` });
        const capEl = el("div", { className: "cap", style: `left:${left};width:${(100 * budgetMs) / D}%;color:var(--s-${name})` });
        timeline.insertBefore(capEl, nowMark);
        timeline.insertBefore(segEl, capEl);
        segs.set(name, { el: segEl, start });
        run.running = { name, start, tr };
        write(`level=debug step=${name} msg="started" cap_ms=${Math.round(budgetMs)}`);
        return fn(signal, budgetMs);
      });
    };

    const frame = () => {
      if (run.done) return;
      const t = at();
      remainingEl.textContent = `${(edge.remaining() / 1000).toFixed(3)} s`;
      nowMark.style.left = `${Math.min(100, (100 * t) / D)}%`;
      const r = run.running;
      if (r) {
        const elapsed = t - r.start;
        segs.get(r.name).el.style.width = `${(100 * elapsed) / D}%`;
        r.tr.querySelector(".elapsed").textContent = ms(elapsed);
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);

    run.cancel = (why) => {
      if (user.signal.aborted) return;
      write(`level=info msg="client closed the request" reason="${why}"`);
      user.abort(new DOMException(`the client closed the request (${why})`, "AbortError"));
    };
    const cancelTimer = cfg.cancelAt === null ? undefined : setTimeout(() => run.cancel("the user cancelled"), cfg.cancelAt);

    let docs = null;
    let answer = null;
    let why = "";
    try {
      await step("auth", (signal) => stub("auth", cfg.auth, signal, "user-42"));
      docs = await step("retrieval", (signal) => stub("retrieval", cfg.retrieval, signal, DOCS));
      const generated = await step("generation", (signal, budgetMs) => generate(signal, budgetMs)).catch((e) => {
        section.dataset.generation = "failed";
        throw e;
      });
      if (generated.skipped) {
        section.dataset.generation = "skipped";
        why = `generation was skipped: ${generated.reason}`;
        write(`level=warn step=generation msg="skipped" reason="${generated.reason}"`);
      } else {
        section.dataset.generation = "ok";
        await step("policy", (signal) => stub("policy", cfg.policy, signal, "passed"));
        answer = generated;
      }
    } catch (e) {
      if (!user.signal.aborted) {
        why = isRetryFailed(e) ? `generation's retry stopped (${e.reason}): ${e.message}` : `${stepName} ended with ${describeError(e)}`;
      }
    }

    let outcome;
    if (user.signal.aborted) {
      outcome = "cancelled";
    } else if (answer) {
      outcome = "answer";
    } else {
      try {
        await step("fallback", (signal) => stub("fallback", cfg.fallback, signal, docs ? "links" : "apology"));
        outcome = "fallback";
      } catch (e) {
        outcome = user.signal.aborted ? "cancelled" : "error";
        why = `${why}; the fallback failed too: ${describeError(e)}`;
      }
    }
    const sentAt = at();
    clearTimeout(cancelTimer);
    run.done = true;
    const left = edge.remaining();
    remainingEl.textContent = `${(left / 1000).toFixed(3)} s`;
    nowMark.style.left = `${Math.min(100, (100 * sentAt) / D)}%`;

    const when = `at t=${(sentAt / 1000).toFixed(3)} s of ${(D / 1000).toFixed(1)} s`;
    if (outcome === "answer") {
      response.textContent = `200: the generated answer, policy check passed, sent ${when}.`;
      response.className = "response ok";
    } else if (outcome === "fallback") {
      const what = docs ? `links to the ${docs.length} retrieved documents` : "an honest “try again” with the operation id (no documents were retrieved)";
      response.textContent = `200 with the fallback: ${what}, sent ${when} from the reserve. Why: ${why}.`;
      response.className = "response fallback";
    } else if (outcome === "cancelled") {
      const stopped = stubEvents.map((e) => `${e.name} stopped after ${ms(e.afterMs)}`).join(", ");
      response.textContent = `Aborted: the client left ${when}; nothing is sent. Every stub in flight saw the abort${stopped ? ` (${stopped})` : ""}; no later step started.`;
      response.className = "response bad";
    } else {
      response.textContent = `504 ${when}: ${why}.`;
      response.className = "response bad";
    }
    write(`level=info msg="response" outcome=${outcome} sent_at_ms=${Math.round(sentAt)} within_deadline=${sentAt <= D}`);
    write(`level=info msg="budget trace" trace=${p.trace()}`);
    summary.textContent = `${outcome} ${when}`;
    timeline.setAttribute("aria-label", `Budget timeline: ${outcome} ${when}`);
    edge.dispose();
    current = undefined;
    for (const b of [runButton, ...scenarioButtons]) b.disabled = false;
    if (hadFocus && (document.activeElement === cancelButton || document.activeElement === document.body)) returnFocus.focus();
    cancelButton.disabled = true;
    section.dataset.outcome = outcome;
    section.dataset.runState = "done";

    /** Generation through retry(): its own deadline is the step's cap. */
    async function generate(signal, budgetMs) {
      const deadline = Deadline.in(budgetMs, { signal });
      const minMs = cfg.steps.find((s) => s.name === "generation").minMs;
      try {
        return await retry(
          (attemptSignal, info) => {
            write(`level=debug step=generation attempt=${info.attempt} msg="attempt started" timeout_ms=${Math.round(info.timeoutMs)}`);
            if (info.attempt === 1 && cfg.failFirst) {
              const e = Object.assign(new Error("503 Service Unavailable from the model endpoint"), { failure: "not-applied" });
              return stub("generation", cfg.failMs, attemptSignal, null, e).catch((error) => {
                if (error === e) write(`level=warn step=generation attempt=1 msg="attempt failed" error="${e.message}"`);
                throw error;
              });
            }
            return stub("generation", cfg.generation, attemptSignal, { text: "Reset it from Settings → Security." });
          },
          { deadline, attemptMinMs: minMs, backoff: { baseMs: cfg.backoff, maxMs: cfg.backoff, jitter: 0 }, maxAttempts: 2, idempotent: true },
        );
      } catch (e) {
        if (isRetryFailed(e)) {
          section.dataset.retry = e.reason;
          write(`level=warn step=generation msg="retry stopped" reason=${e.reason} attempts=${e.attempts.length} detail="${e.message}"`);
        }
        throw e;
      } finally {
        deadline.dispose();
      }
    }
  }

  // ── wiring ──────────────────────────────────────────────────────────────────
  slider.addEventListener("input", () => {
    if (preset) fill(preset);
    idle();
  });
  for (const input of Object.values(inputs)) input.addEventListener("input", () => (preset = null));
  for (const b of scenarioButtons) {
    b.addEventListener("click", () => {
      if (current) return;
      fill(b.dataset.scenario);
      runRequest(config()).catch(showBug);
    });
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!current) runRequest(config()).catch(showBug);
  });
  cancelButton.addEventListener("click", () => current?.cancel?.("the user pressed Cancel"));

  function showBug(e) {
    // A plan that cannot be built (e.g. a duplicate step name) is a RangeError from the core.
    if (current) {
      current.done = true;
      current.edge.dispose();
    }
    current = undefined;
    response.textContent = `Could not run: ${describeError(e)}`;
    response.className = "response bad";
    for (const b of [runButton, ...scenarioButtons]) b.disabled = false;
    cancelButton.disabled = true;
    section.dataset.runState = "done";
    section.dataset.outcome = "invalid";
  }

  fill("fast");
  idle();
}
