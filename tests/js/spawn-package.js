// For the Node and Bun runners only (it spawns processes): a fresh process of the running runtime
// with the package's entry imported.
import { spawn } from "node:child_process";

/**
 * A `spawnPackageScript(code, { captureStderr })` for `entry` (the package entry's URL): it runs
 * `code` in a fresh process of this runtime (`process.execPath` with `evalArgs`, e.g. Node's
 * `--input-type=module -e`) with `init`, `Deadline`, `entryUrl` (the entry itself), `wasmUrl` (the
 * .wasm's file: URL), `deriveUrl` and `readBytes(url)` in scope, and resolves { code, ms, stdout,
 * stderr }. Its stderr is passed through unless `captureStderr` (then it is only returned).
 * @param {string} entry
 * @param {string[]} evalArgs
 */
export function packageScriptSpawner(entry, evalArgs) {
  return (code, { captureStderr = false } = {}) => {
    const source = `import { init, Deadline } from ${JSON.stringify(entry)};
const entryUrl = ${JSON.stringify(entry)};
const wasmUrl = new URL("./edge_deadline_bg.wasm", ${JSON.stringify(entry)});
const deriveUrl = new URL("./derive-node.js", ${JSON.stringify(entry)});
const readBytes = async (url) => (await import("node:fs/promises")).readFile(url);
${code}`;
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const child = spawn(process.execPath, [...evalArgs, source], { stdio: ["ignore", "pipe", captureStderr ? "pipe" : "inherit"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr?.on("data", (d) => (stderr += d));
      child.on("error", reject);
      child.on("close", (exit) => resolve({ code: exit, ms: performance.now() - started, stdout, stderr }));
    });
  };
}
