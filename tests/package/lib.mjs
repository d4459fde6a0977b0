// Shared plumbing for the packaging tests: fresh temp projects with the
// tarball installed offline, child processes that are killed on every path,
// free ports, and a tiny assertion-recording harness.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const bin = {
  node: process.execPath,
  npm: "npm",
  deno: join(root, "node_modules/@deno/linux-x64-glibc/deno"),
  wrangler: join(root, "node_modules/wrangler/bin/wrangler.js"),
  tsc: join(root, "node_modules/typescript/bin/tsc"),
};

// ---- cleanup on every path ------------------------------------------------------

const children = new Set();
const tempDirs = new Set();
const keep = process.env.KEEP_PACKAGE_TMP === "1";

/** Kills every child still running (its whole process group: wrangler's workerd too). */
export function killAll() {
  for (const child of children) killGroup(child);
  children.clear();
}

function killGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL"); // detached: the child leads its own group
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
}

function cleanup() {
  killAll();
  if (!keep) for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

/** A fresh directory under the OS temp dir, removed at exit (KEEP_PACKAGE_TMP=1 keeps it). */
export function tempDir(label) {
  const d = mkdtempSync(join(tmpdir(), `edge-deadline-${label}-`));
  tempDirs.add(d);
  return d;
}

/**
 * Starts a process in its own group; it is killed at exit whatever happens.
 * `result` resolves `{ code, signal, stdout, stderr }` when it exits.
 */
export function start(cmd, args, { cwd, env, stdin = "ignore" } = {}) {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: [stdin, "pipe", "pipe"], detached: true });
  children.add(child);
  let stdout = "";
  let stderr = "";
  const listeners = new Set();
  const onData = () => listeners.forEach((l) => l());
  child.stdout.on("data", (d) => ((stdout += d), onData()));
  child.stderr.on("data", (d) => ((stderr += d), onData()));
  const result = new Promise((resolve) => {
    child.on("error", (e) => ((stderr += String(e)), resolve({ code: 1, signal: null, stdout, stderr })));
    child.on("close", (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    child,
    result,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    /** Resolves when stdout or stderr matches `re`; rejects if the process exits first or at `timeoutMs`. */
    waitFor(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        // Colour codes are stripped first: under CI=true tools colour their
        // output even into a pipe (vite wraps the port of its URL in bold).
        const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, "");
        const check = () => {
          const m = re.exec(plain(stdout)) ?? re.exec(plain(stderr));
          if (m) return done(), resolve(m);
        };
        const t = setTimeout(() => (done(), reject(new Error(`timed out after ${timeoutMs} ms waiting for ${re} from ${cmd}\nstdout: ${stdout.slice(-2000)}\nstderr: ${stderr.slice(-2000)}`))), timeoutMs);
        const done = () => (clearTimeout(t), listeners.delete(check));
        listeners.add(check);
        result.then(({ code }) => {
          if (!listeners.has(check)) return;
          done();
          reject(new Error(`${cmd} exited (${code}) before printing ${re}\nstdout: ${stdout.slice(-2000)}\nstderr: ${stderr.slice(-2000)}`));
        });
        check();
      });
    },
    kill() {
      killGroup(child);
      children.delete(child);
      return result;
    },
  };
}

/** Runs to completion (killed at `timeoutMs`); resolves `{ code, stdout, stderr }`. */
export async function run(cmd, args, { timeoutMs = 60_000, ...opts } = {}) {
  const p = start(cmd, args, opts);
  const t = setTimeout(() => p.kill(), timeoutMs);
  const r = await p.result;
  clearTimeout(t);
  if (r.signal) r.stderr += `\n(killed by ${r.signal}${r.signal === "SIGKILL" ? `, probably the ${timeoutMs} ms timeout` : ""})`;
  return r;
}

/** Like `run`, but throws unless it exits 0. */
export async function runOk(cmd, args, opts) {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`);
  return r;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/**
 * A fresh project in a temp dir with the tarball installed from the file,
 * offline (the package has no dependencies, so nothing else is fetched), and
 * `files` (paths under examples/) copied in.
 */
export async function project(label, tarball, { copy = {} } = {}) {
  const dir = tempDir(label);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `try-${label}`, private: true, type: "module" }, null, 2));
  await runOk(bin.npm, ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", "--cache", join(dir, ".npm-cache"), tarball], {
    cwd: dir,
    env: { npm_config_update_notifier: "false" },
    timeoutMs: 60_000,
  });
  for (const [from, to] of Object.entries(copy)) {
    mkdirSync(dirname(join(dir, to)), { recursive: true });
    cpSync(join(root, "examples", from), join(dir, to), { recursive: true });
  }
  return dir;
}

/** An env that keeps a tool's home, config and caches inside `dir`. */
export function isolatedEnv(dir) {
  const home = join(dir, ".home");
  mkdirSync(home, { recursive: true });
  return { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), XDG_CACHE_HOME: join(home, ".cache"), XDG_DATA_HOME: join(home, ".local/share") };
}

// ---- assertions, recorded -------------------------------------------------------

/**
 * One group of named checks. `check(name, fn)` runs `fn` and records pass or
 * fail; `fact(text)` records a figure for the report.
 */
export function group(name, report) {
  return {
    async check(checkName, fn) {
      const full = `${name}: ${checkName}`;
      const t0 = performance.now();
      try {
        await fn();
        report.passed++;
        console.log(`  ✓ ${full} (${Math.round(performance.now() - t0)} ms)`);
      } catch (error) {
        report.failed++;
        report.failures.push({ name: full, error: String(error?.stack ?? error) });
        console.log(`  ✗ ${full}\n    ${String(error?.message ?? error).split("\n").join("\n    ")}`);
      }
    },
    /**
     * A size or speed target the package does not meet yet: checked and printed
     * like `check`, but a miss is counted as skipped (with the figure in the
     * summary) instead of failing the run. A met target passes. Turn one into
     * `check` once it is met, so that it cannot regress.
     */
    async target(checkName, fn) {
      const full = `${name}: ${checkName}`;
      try {
        await fn();
        report.passed++;
        console.log(`  ✓ ${full}`);
      } catch (error) {
        report.skipped++;
        const why = String(error?.message ?? error).split("\n")[0];
        report.notes.push(`target not met: ${why}`);
        console.log(`  ○ ${full} (target not met yet)\n    ${why}`);
      }
    },
    /** A figure for the log; `short`, if given, also goes in the summary line. */
    fact(text, short) {
      report.facts.push(text);
      if (short) report.notes.push(short);
      console.log(`  · ${name}: ${text}`);
    },
  };
}

/** Resolves `promise`, or rejects after `ms` with a message naming `what`. */
export function within(ms, what, promise) {
  let t;
  return Promise.race([
    promise.finally(() => clearTimeout(t)),
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]);
}
