// Reads wasm-pack.toml (the Wasm build's configuration) and the
// [package.metadata.wasm-pack] tables of Cargo.toml with smol-toml, a
// maintained TOML parser: the whole language, and a syntax error names its
// line and column, so a wrong build is never guessed.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The TOML file `file` as plain data; a parse error says which file. */
export function readToml(file) {
  try {
    return parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${file}: ${error.message}`, { cause: error });
  }
}

/** wasm-pack.toml, checked: `{ build: {...}, output: [{ name, features }] }`. */
export function readWasmConfig(file = join(root, "wasm-pack.toml")) {
  const config = readToml(file);
  const { build, output } = config;
  const need = (ok, what) => {
    if (!ok) throw new Error(`wasm-pack.toml: ${what}`);
  };
  need(build && typeof build.profile === "string", "[build] needs `profile` (a cargo profile name)");
  need(Array.isArray(build.targets) && build.targets.length === 1, "[build] `targets` names one wasm-bindgen target");
  need(typeof build["out-dir"] === "string", "[build] needs `out-dir`");
  need(Array.isArray(build["wasm-opt"]), "[build] `wasm-opt` is an array of flags");
  need(build.rustflags === undefined || (Array.isArray(build.rustflags) && build.rustflags.every((f) => typeof f === "string" && !/\s/.test(f))), "[build] `rustflags` is an array of flags without spaces");
  need(Array.isArray(output) && output.length > 0, "needs at least one [[output]]");
  for (const o of output) {
    need(typeof o.name === "string" && /^\w+$/.test(o.name), "each [[output]] has a `name` (letters, digits, _)");
    need(Array.isArray(o.features), `[[output]] ${o.name} lists its cargo \`features\``);
  }
  return config;
}

/** Cargo.toml's [package.metadata.wasm-pack] tables. */
export function readCargoWasmPack(file = join(root, "Cargo.toml")) {
  return readToml(file).package?.metadata?.["wasm-pack"];
}
