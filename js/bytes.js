// Bytes read in pieces, as one.

/** `parts` as one array (the one part itself when there is one); `total`, when known, is their length. */
export function concat(parts, total) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(total ?? parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
