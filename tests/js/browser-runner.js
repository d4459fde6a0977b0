// Chromium runner: loaded by browser.html; publishes the report on
// `globalThis.__report` for the Playwright driver in tests/run.mjs.
import * as lib from "../../pkg/index.js";
import { prepare, runSuite } from "./harness.js";

try {
  const fixtureUrl = new URL(location.href).searchParams.get("fixture") ?? undefined;
  const ctx = { fixtureUrl, runtime: navigator.userAgent.match(/(Headless)?Chrome\/[\d.]+/)?.[0] ?? "chromium", ...(await prepare(lib)) };
  globalThis.__report = await runSuite(lib, ctx);
} catch (error) {
  globalThis.__report = { runtime: "chromium", passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: String(error?.stack ?? error) }] };
}
