// Code blocks and links of the user documents, for the tests that run the
// documents as printed (the README's quick start, the SDK recipes) and check
// their links. Plain line scanning: the documents are ours and simple.

/**
 * The fenced code blocks of `markdown` as `[{ heading, lang, code }]`, where
 * `heading` is the text of the nearest `#`-heading above the block.
 */
export function codeBlocks(markdown) {
  const out = [];
  let heading = "";
  let block = null;
  for (const line of markdown.split("\n")) {
    if (block) {
      if (/^```\s*$/.test(line)) {
        out.push(block);
        block = null;
      } else block.code += `${line}\n`;
    } else if (/^```/.test(line)) block = { heading, lang: line.slice(3).trim(), code: "" };
    else if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, "").trim();
  }
  return out;
}

/** The one `js` block under the heading that starts with `prefix`; throws when there is not exactly one. */
export function jsBlockUnder(markdown, prefix) {
  const found = codeBlocks(markdown).filter((b) => b.lang === "js" && b.heading.startsWith(prefix));
  if (found.length !== 1) throw new Error(`expected one js block under a heading starting "${prefix}", found ${found.length}`);
  return found[0].code;
}

/** Targets of the inline links `[text](target)` outside code blocks and code spans. */
export function links(markdown) {
  const prose = markdown.replace(/^```[\s\S]*?^```\s*$/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}
