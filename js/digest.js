// The digest of a .wasm's export names: scripts/build.mjs records it for
// each core it builds (wasm_exports.js), and js/loader.js compares a module
// it is handed against that record before the glue sees the module. One
// definition, imported by both.

/** FNV-1a (32 bits) of `names` in order, each followed by a separator, so ["ab"] ≠ ["a", "b"]. */
export function exportsDigest(names) {
  let h = 0x811c9dc5;
  for (const name of names) {
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    h = Math.imul(h ^ 0x2c, 0x01000193) >>> 0;
  }
  return h;
}
