// The web API's cases (tests/web/cases/) in Deno: wasm-bindgen-test-runner's
// Deno mode does not work with Deno 2, so `node tests/run.mjs web-deno` builds
// tests/web/deno/lib.rs (`wasm-bindgen --target web` into WEB_CASES_DIR) and
// runs this file with `deno test`. FIXTURE_URL is the fixture server.
//
// Sanitizers are off: like the JavaScript API, deadlines share one unref'd
// host timer that stays armed (lazily) after the last deadline is dropped; the
// cases check "nothing pending after drop" by behaviour instead, and the last
// two tests check that open deadlines never keep a process alive.
const dir = Deno.env.get("WEB_CASES_DIR");
const glue = await import(`file://${dir}/web_cases.js`);
glue.initSync({ module: await Deno.readFile(`${dir}/web_cases_bg.wasm`) });
const fixture = Deno.env.get("FIXTURE_URL");
const options = { sanitizeOps: false, sanitizeResources: false };

for (const name of glue.caseNames()) {
  Deno.test({ name, ...options, fn: () => glue.runCase(name, fixture) });
}

// The Rust API's errors as the npm package's guards see them: the same
// brands, across the two copies (the Rust module and pkg/), as a JS caller of
// a Rust Worker would check them. Guards the package does not have (yet) are
// left out.
Deno.test({
  name: "the package's JS guards recognise the Rust API's errors",
  ...options,
  fn: async () => {
    const lib = await import(new URL("../../../pkg/index.js", import.meta.url).href);
    await lib.init(await Deno.readFile(new URL("../../../pkg/edge_deadline_bg.wasm", import.meta.url)));
    const [deadline, insufficient, stalled, step, retry, attempt, header, reason] = glue.brandedErrors();
    const expected = [
      ["isDeadlineExceeded", deadline],
      ["isInsufficientBudget", insufficient],
      ["isStreamStalled", stalled],
      ["isStepTimeout", step],
      ["isRetryFailed", retry],
      ["isInvalidHeader", header],
      ["isDeadlineExceeded", reason],
    ];
    const checked = [];
    for (const [guard, error] of expected) {
      if (typeof lib[guard] !== "function") continue;
      checked.push(guard);
      if (!lib[guard](error)) throw new Error(`${guard} does not recognise ${error?.name}: ${error?.message}`);
      for (const other of [deadline, insufficient, stalled, step, retry, attempt, header]) {
        if (other !== error && other.name !== error.name && lib[guard](other)) throw new Error(`${guard} accepts ${other.name}`);
      }
      if (!(error instanceof Error)) throw new Error(`${error.name} is not an Error`);
    }
    for (const guard of ["isDeadlineExceeded", "isInsufficientBudget", "isStreamStalled", "isRetryFailed"]) {
      if (!checked.includes(guard)) throw new Error(`the package has no ${guard}`);
    }
    if (reason.at !== 0 || !(reason.lateByMs > 0)) throw new Error(`the signal's reason: at ${reason.at}, lateByMs ${reason.lateByMs}`);
    // Rust's `is_timeout` means what `isTimeout` means, on the same values (wrapped too).
    const wrap = (cause) => Object.assign(new Error("Connection error."), { cause });
    const values = [deadline, insufficient, stalled, step, retry, attempt, header, reason, new DOMException("t", "TimeoutError"), new DOMException("a", "AbortError"), new Error("timed out")];
    for (const v of [...values, ...values.map(wrap)]) {
      const [js, rust] = [lib.isTimeout(v), glue.rustIsTimeout(v)];
      if (js !== rust) throw new Error(`isTimeout says ${js}, is_timeout says ${rust} for ${v?.name}: ${v?.message} (cause ${v?.cause?.name})`);
    }
    if (glue.rustIsTimeout(insufficient)) throw new Error("InsufficientBudget is a timeout in Rust");
  },
});

// A child process that leaves deadlines (with signals, one linked to a
// parent) and an unref'd Timeout pending must still exit at once.
const script = `
  const glue = await import(${JSON.stringify(`file://${dir}/web_cases.js`)});
  const { readFileSync } = await import("node:fs");
  glue.initSync({ module: readFileSync(${JSON.stringify(`${dir}/web_cases_bg.wasm`)}) });
  glue.openDeadlines();
  console.log("open");
`;
const children = {
  deno: [Deno.execPath(), ["eval", "--quiet", script]],
  node: [Deno.env.get("NODE") ?? "node", ["--input-type=module", "-e", script]],
};
/** Runs `cmd args` as a child: it must exit by itself within 10 s, with code 0, having printed `expected`. */
async function exitsWith(cmd, args, expected) {
  const child = new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", env: { NO_COLOR: "1" } }).spawn();
  let timer;
  const killed = new Promise((resolve) => {
    timer = setTimeout(() => (child.kill(), resolve("still running after 10 s")), 10_000);
  });
  const result = await Promise.race([child.output(), killed]);
  clearTimeout(timer);
  if (typeof result === "string") throw new Error(result);
  const out = new TextDecoder().decode(result.stdout).trim();
  if (result.code !== 0 || out !== expected) {
    throw new Error(`exit code ${result.code}, stdout ${out}, stderr ${new TextDecoder().decode(result.stderr)}`);
  }
}

for (const [runtime, [cmd, args]] of Object.entries(children)) {
  Deno.test({
    name: `a ${runtime} process with open deadlines exits`,
    ...options,
    fn: async () => {
      await exitsWith(cmd, args, "open");
    },
  });
}

// A child process that awaits a resumable read (`retry`) whose first answer
// is a 503 asking for a second's wait: the backoff's timer is unref'd, but
// someone awaits the read, so the process stays alive for the retry, prints
// its status and exits (the body left unread holds nothing).
for (const [runtime, cmd] of Object.entries({ deno: Deno.execPath(), node: Deno.env.get("NODE") ?? "node" })) {
  Deno.test({
    name: `a ${runtime} process awaiting a resumable read through a backoff stays alive, then exits`,
    ...options,
    fn: async () => {
      const url = `${fixture}/resume/sse?key=rs-keep-${runtime}-${Date.now()}-${Math.random()}&fail=503&retryAfter=1&events=3`;
      const awaiting = `
        const glue = await import(${JSON.stringify(`file://${dir}/web_cases.js`)});
        const { readFileSync } = await import("node:fs");
        glue.initSync({ module: readFileSync(${JSON.stringify(`${dir}/web_cases_bg.wasm`)}) });
        console.log(await glue.resumableStatus(${JSON.stringify(url)}));
      `;
      const args = runtime === "deno" ? ["eval", "--quiet", awaiting] : ["--input-type=module", "-e", awaiting];
      await exitsWith(cmd, args, "200");
    },
  });
}
