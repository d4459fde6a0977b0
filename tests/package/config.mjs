// wasm-pack.toml is the Wasm build's configuration and Cargo.toml's
// [package.metadata.wasm-pack] says the same in wasm-pack's terms: they must
// agree, every output's features must exist, and the package that was built
// must hold what the configuration lists.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCargoWasmPack, readToml, readWasmConfig, root } from "../../scripts/wasm-config.mjs";

export async function checkConfig(g, pkgDir) {
  const config = readWasmConfig();

  await g.check("wasm-pack.toml and Cargo.toml [package.metadata.wasm-pack] agree on wasm-opt and the glue", () => {
    const meta = readCargoWasmPack();
    assert.ok(meta, "Cargo.toml has [package.metadata.wasm-pack]");
    const release = meta.profile?.release;
    assert.deepEqual(release?.["wasm-opt"], config.build["wasm-opt"], "the wasm-opt passes");
    assert.equal(release?.["wasm-bindgen"]?.["debug-js-glue"], false, "release glue, as wasm-bindgen builds it here");
    assert.equal(release?.["wasm-bindgen"]?.["dwarf-debug-info"], false);
    // wasm-pack keeps names unless told; the build strips them (remove-name-section).
    assert.equal(release?.["wasm-bindgen"]?.["demangle-name-section"], !config.build["remove-name-section"]);
  });

  await g.check("every output's features and the profile exist in Cargo.toml", () => {
    const { features = {}, profile = {} } = readToml(join(root, "Cargo.toml"));
    for (const { name, features: fs } of config.output) {
      for (const f of fs) assert.ok(Array.isArray(features[f]), `${name}: Cargo.toml [features] has no \`${f}\``);
    }
    assert.ok(profile[config.build.profile], `Cargo.toml has [profile.${config.build.profile}]`);
    assert.equal(profile[config.build.profile].panic, "abort", "the Wasm profile aborts on panic");
    // The outputs partition the boundary: no feature is in two outputs.
    const all = config.output.flatMap((o) => o.features);
    assert.equal(new Set(all).size, all.length, "a feature in two outputs");
  });

  await g.check("the built package holds one .wasm and one glue per output, nothing else", () => {
    // The glue is bundled (scripts/bundle.mjs): its source map names it.
    const bundled = readdirSync(pkgDir)
      .filter((f) => f.endsWith(".js.map"))
      .flatMap((f) => JSON.parse(readFileSync(join(pkgDir, f), "utf8")).sources);
    for (const { name } of config.output) {
      for (const f of [`${name}_bg.wasm`, `${name}.d.ts`]) assert.ok(existsSync(join(pkgDir, f)), `${f} is missing`);
      assert.equal(bundled.filter((s) => s === `js/${name}.js`).length, 1, `the glue ${name}.js is in one bundled file`);
    }
    const wasm = readFileSync(join(pkgDir, "package.json"), "utf8").match(/[\w]+_bg\.wasm/g);
    assert.deepEqual([...new Set(wasm)].sort(), config.output.map((o) => `${o.name}_bg.wasm`).sort());
  });

  await g.check("the hot paths' Wasm calls pass and return numbers only (src/wasm/deadline.rs, src/wasm/stall.rs)", () => {
    // A boolean argument (a `bool`, or the "is it there" half of an `Option`)
    // and several Wasm results (a `Result` or an `Option` returned) are slow
    // paths in JavaScriptCore (BENCHMARKS.md, "Where users run it"): the
    // calls made per deadline and per wrapped stream cross numbers only.
    const dts = readFileSync(join(pkgDir, "edge_deadline.d.ts"), "utf8");
    const glue = readFileSync(join(pkgDir, "main.js"), "utf8");
    const calls = [
      ["deadlineIn", "export function deadlineIn("],
      ["checkInstant", "export function checkInstant("],
      ["reserve", "export function reserve("],
      ["budget", "export function budget("],
      ["admit", "export function admit("],
      ["firstChunkWait", "export function firstChunkWait("],
      ["stallStart", "export function stallStart("],
      ["stallwatcher_new", "  constructor(first_chunk_ms"],
      ["stallwatcher_wake", "    wake(now_ms: number, chunks"],
      ["stallwatcher_resume", "    resume(now_ms: number, chunks"],
      ["stallwatcher_burst", "    burst(now_ms"],
    ];
    for (const [wasmName, declared] of calls) {
      const at = dts.indexOf(declared);
      assert.ok(at >= 0, `${declared} is declared in edge_deadline.d.ts`);
      const declaration = dts.slice(at, dts.indexOf("\n", at));
      const params = declaration.slice(declaration.indexOf("(") + 1, declaration.lastIndexOf(")")).split(", ");
      for (const param of params) assert.match(param, /^\w+: number$/, `${wasmName}: every parameter is a number (${declaration.trim()})`);
      if (wasmName !== "stallwatcher_new") assert.match(declaration, /\): number;$/, `${wasmName} returns a number`);
      const call = glue.indexOf(`wasm.${wasmName}(`);
      assert.ok(call >= 0, `main.js calls wasm.${wasmName}`);
      const rest = glue.slice(call, glue.indexOf("\n", glue.indexOf("return", call)));
      // (from the call to its glue's `return`: where a Result or an Option is taken apart)
      // The constructor's one Result stays (it runs once per stream that sees a wake).
      if (wasmName !== "stallwatcher_new") assert.doesNotMatch(rest, /ret\[/, `wasm.${wasmName} hands back one value, not an array`);
    }
  });

  await g.check("a malformed wasm-pack.toml is refused naming the file and the line (a wrong build is never guessed)", () => {
    const dir = mkdtempSync(join(tmpdir(), "edge-deadline-toml-"));
    try {
      const file = join(dir, "wasm-pack.toml");
      writeFileSync(file, '[build]\nprofile = "wasm"\njust words\n');
      assert.throws(() => readWasmConfig(file), (e) => e.message.startsWith(`${file}: `) && /^3:\s+just words$/m.test(e.message));
      writeFileSync(file, '[build]\nprofile = "wasm"\n');
      assert.throws(() => readWasmConfig(file), /`targets` names one wasm-bindgen target/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
