// A size profile of a .wasm: the code size of each function (its body in the
// code section), biggest first, and the same grouped by where the function
// comes from (crate and module path, generics stripped). Function names come
// from the name section, so profile a names build:
//   WASM_NAMES=1 node scripts/build.mjs && node scripts/wasm-sizes.mjs pkg/edge_deadline_bg.wasm
// Options: --top N (functions listed, default 40), --groups N (groups listed,
// default 30), --depth N (path segments a group keeps, default 3), --grep RE
// (only functions whose name matches). Sizes are raw bytes (before gzip).
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const [v] = args.splice(i, 2).slice(1);
  return v;
};
const top = Number(opt("top", 40));
const groupsShown = Number(opt("groups", 30));
const depth = Number(opt("depth", 3));
const grep = opt("grep", null);
const file = args[0];
if (!file) {
  console.error("usage: node scripts/wasm-sizes.mjs FILE.wasm [--top N] [--groups N] [--depth N] [--grep RE]");
  process.exit(2);
}
const buf = readFileSync(file);

let pos = 0;
const u32 = () => {
  let result = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[pos++];
    result += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return result;
    shift += 7;
  }
};
const name = () => {
  const len = u32();
  const s = buf.toString("utf8", pos, pos + len);
  pos += len;
  return s;
};

if (buf.readUInt32LE(0) !== 0x6d736100) throw new Error(`${file} is not a .wasm`);
pos = 8;
let importedFunctions = 0;
const bodies = []; // [offset, size] per defined function
const names = new Map(); // function index -> name
const sections = [];
while (pos < buf.length) {
  const id = buf[pos++];
  const size = u32();
  const start = pos;
  const end = start + size;
  let label = `#${id}`;
  if (id === 0) {
    label = `custom "${name()}"`;
    if (label === 'custom "name"') {
      while (pos < end) {
        const sub = buf[pos++];
        const subSize = u32();
        const subEnd = pos + subSize;
        if (sub === 1) {
          const count = u32();
          for (let i = 0; i < count; i++) {
            const index = u32();
            names.set(index, name());
          }
        }
        pos = subEnd;
      }
    }
  } else if (id === 2) {
    label = "import";
    const count = u32();
    for (let i = 0; i < count; i++) {
      name();
      name();
      const kind = buf[pos++];
      if (kind === 0) {
        u32();
        importedFunctions++;
      } else if (kind === 1) {
        pos++;
        const flags = u32();
        u32();
        if (flags & 1) u32();
      } else if (kind === 2) {
        const flags = u32();
        u32();
        if (flags & 1) u32();
      } else if (kind === 3) pos += 2;
      else if (kind === 4) {
        pos++;
        u32();
      } else throw new Error(`import kind ${kind}`);
    }
  } else if (id === 10) {
    label = "code";
    const count = u32();
    for (let i = 0; i < count; i++) {
      const bodySize = u32();
      bodies.push([pos, bodySize]);
      pos += bodySize;
    }
  } else {
    label = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count", "tag"][id] ?? label;
  }
  sections.push({ label, size });
  pos = end;
}

const kb = (n) => (n / 1024).toFixed(1).padStart(6);
console.log(`${file}: ${buf.length} B, gzip ${gzipSync(buf).length} B; ${bodies.length} functions (+${importedFunctions} imported)${names.size ? "" : ", no name section: profile a WASM_NAMES=1 build"}`);
console.log("sections:", sections.map((s) => `${s.label} ${s.size}`).join(", "));

// Strip generic arguments and closure/hash suffixes, keep `depth` path segments.
// `<T as Trait>::method` is grouped under T's path.
function group(n) {
  let s = n.replace(/::h[0-9a-f]{16}$/, "");
  const asImpl = /^<(.+?) as .+>::(.+)$/.exec(s);
  if (asImpl) s = `${asImpl[1]}::${asImpl[2]}`;
  s = s.replace(/^<|>$/g, "");
  // Drop generic arguments, innermost first.
  for (let prev; prev !== s; ) {
    prev = s;
    s = s.replace(/<[^<>]*>/g, "");
  }
  s = s.replace(/^&(mut )?/, "").replace(/^\[|\]$/g, "");
  return s.split("::").slice(0, depth).join("::");
}

const fns = bodies.map(([, size], i) => ({ size, name: names.get(importedFunctions + i) ?? `func[${importedFunctions + i}]` }));
const re = grep ? new RegExp(grep) : null;
const shown = re ? fns.filter((f) => re.test(f.name)) : fns;
const total = shown.reduce((s, f) => s + f.size, 0);
console.log(`\ncode: ${total} B in ${shown.length} functions${re ? ` matching /${grep}/` : ""}\n\nbiggest functions (B):`);
for (const f of [...shown].sort((a, b) => b.size - a.size).slice(0, top)) console.log(String(f.size).padStart(7), f.name.length > 160 ? `${f.name.slice(0, 157)}...` : f.name);

const groups = new Map();
for (const f of shown) {
  const g = group(f.name);
  const e = groups.get(g) ?? { size: 0, count: 0 };
  e.size += f.size;
  e.count++;
  groups.set(g, e);
}
console.log(`\nby origin (first ${depth} path segments; B, KB, functions):`);
for (const [g, e] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, groupsShown)) console.log(String(e.size).padStart(7), kb(e.size), String(e.count).padStart(4), g);
