// The digest of a .wasm's export names: scripts/build.mjs records it for
// each core it builds (wasm_exports.js), and js/loader.js compares a module
// it is handed against that record before the glue sees the module. One
// definition, imported by both.
//
// It runs once per process on the first call's path, cold (in the
// interpreter): it hashes 32-bit words rather than characters, a quarter of
// the iterations, which also keeps the loop under the count where V8 stops to
// compile it on the way (BENCHMARKS.md, "Size and start-up").

/**
 * FNV-1a (32 bits) over the UTF-8 of `names` in order, each followed by a comma (so ["ab"] ≠
 * ["a", "b"]), taken as little-endian 32-bit words (zero-padded), seeded with the byte length.
 * @param {string[]} names
 */
export function exportsDigest(names) {
  const text = new TextEncoder().encode(`${names.join(",")},`);
  const bytes = new Uint8Array((text.length + 3) & ~3);
  bytes.set(text);
  const words = new DataView(bytes.buffer);
  let h = Math.imul(0x811c9dc5 ^ text.length, 0x01000193);
  for (let i = 0; i < bytes.length; i += 4) h = Math.imul(h ^ words.getUint32(i, true), 0x01000193);
  return h >>> 0;
}
