// Reads wasm-pack.toml (the Wasm build's configuration) and the
// [package.metadata.wasm-pack] tables of Cargo.toml. The build has no
// dependencies of its own, so this is a parser for the small TOML subset those
// files use: [table] and [[array-of-tables]] headers (dotted names), `key =
// value` with strings, booleans, integers and (multi-line) arrays of those,
// and comments. Anything else is an error naming the line, never a guess.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Parses one scalar or array value; `text` is everything after `=`, comments removed. */
function value(text, where) {
  text = text.trim();
  if (text.startsWith("[")) {
    const inner = text.slice(1, text.lastIndexOf("]")).trim();
    if (!text.endsWith("]")) throw new Error(`${where}: an array must end with ]`);
    return inner === "" ? [] : splitTop(inner).filter((s) => s.trim() !== "").map((s) => value(s, where));
  }
  if (/^"(?:[^"\\]|\\.)*"$/.test(text)) return JSON.parse(text);
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+$/.test(text)) return Number(text);
  throw new Error(`${where}: unsupported value ${JSON.stringify(text)} (this parser reads strings, booleans, integers and arrays)`);
}

/** The characters of `text` that are outside "strings", with their indices. */
function* outsideStrings(text) {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else yield [i, c];
  }
}

/** Splits on the commas outside strings and brackets. */
function splitTop(text) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (const [i, c] of outsideStrings(text)) {
    if (c === "[") depth++;
    else if (c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** Removes a `#` comment that is outside a string. */
function stripComment(line) {
  for (const [i, c] of outsideStrings(line)) if (c === "#") return line.slice(0, i);
  return line;
}

const bracketBalance = (s) => [...s].reduce((n, c) => n + (c === "[" ? 1 : c === "]" ? -1 : 0), 0);

/**
 * Parses `text`; `only(tableName)` says which tables to read (the others are
 * skipped unparsed, so Cargo.toml's inline tables never reach this parser).
 */
export function parseToml(text, { only = () => true, file = "toml" } = {}) {
  const doc = {};
  let table = doc;
  let reading = only("");
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const where = `${file}:${i + 1}`;
    let line = stripComment(lines[i]).trim();
    if (line === "") continue;
    const header = /^(\[\[?)\s*(.+?)\s*(\]\]?)$/.exec(line);
    if (header) {
      const name = header[2];
      reading = only(name);
      if (!reading) continue;
      if (!/^[\w.-]+$/.test(name)) throw new Error(`${where}: this parser reads plain dotted table names, not ${name}`);
      const path = name.split(".");
      let at = doc;
      for (const key of path.slice(0, -1)) at = at[key] ??= {};
      const last = path.at(-1);
      if (header[1] === "[[") {
        (at[last] ??= []).push((table = {}));
      } else {
        table = at[last] ??= {};
      }
      continue;
    }
    if (!reading) continue;
    const eq = line.indexOf("=");
    if (eq < 0) throw new Error(`${where}: expected \`key = value\``);
    const key = line.slice(0, eq).trim().replace(/^"(.*)"$/, "$1");
    let rest = line.slice(eq + 1);
    while (bracketBalance(rest) > 0 && i + 1 < lines.length) rest += " " + stripComment(lines[++i]).trim();
    table[key] = value(rest, where);
  }
  return doc;
}

/** wasm-pack.toml, checked: `{ build: {...}, output: [{ name, features }] }`. */
export function readWasmConfig(file = join(root, "wasm-pack.toml")) {
  const config = parseToml(readFileSync(file, "utf8"), { file: "wasm-pack.toml" });
  const { build, output } = config;
  const need = (ok, what) => {
    if (!ok) throw new Error(`wasm-pack.toml: ${what}`);
  };
  need(build && typeof build.profile === "string", "[build] needs `profile` (a cargo profile name)");
  need(Array.isArray(build.targets) && build.targets.length === 1, "[build] `targets` names one wasm-bindgen target");
  need(typeof build["out-dir"] === "string", "[build] needs `out-dir`");
  need(Array.isArray(build["wasm-opt"]), "[build] `wasm-opt` is an array of flags");
  need(Array.isArray(output) && output.length > 0, "needs at least one [[output]]");
  for (const o of output) {
    need(typeof o.name === "string" && /^\w+$/.test(o.name), "each [[output]] has a `name` (letters, digits, _)");
    need(Array.isArray(o.features), `[[output]] ${o.name} lists its cargo \`features\``);
  }
  return config;
}

/** Cargo.toml's [package.metadata.wasm-pack…] tables (nothing else of Cargo.toml is parsed). */
export function readCargoWasmPack(file = join(root, "Cargo.toml")) {
  const doc = parseToml(readFileSync(file, "utf8"), {
    file: "Cargo.toml",
    only: (name) => name.startsWith("package.metadata.wasm-pack"),
  });
  return doc.package?.metadata?.["wasm-pack"];
}
