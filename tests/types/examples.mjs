// The README's examples and docs/api.md's Hono examples, type-checked as printed (`node tests/run.mjs types`):
// each js block is written to test-output/types-examples/ as a module and compiled by tsc with
// checkJs against pkg/'s .d.ts and the real `hono` types, with no generics added. They run
// (and assert what they show) in tests/package; here the types must accept them as written.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { codeBlocks, jsBlockUnder } from "../support/markdown.mjs";
import { sections } from "../package/docs.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const out = join(root, "test-output/types-examples");

/** Writes the examples and their tsconfig; returns the tsconfig's path. */
export function writeExamples() {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const files = [];
  const put = (name, code) => {
    writeFileSync(join(out, name), code);
    files.push(name);
  };
  const readme = readFileSync(join(root, "README.md"), "utf8");
  put("readme-quick-start.mjs", jsBlockUnder(readme, "Quick start"));
  put("readme-hono.mjs", jsBlockUnder(readme, "With Hono"));
  // docs/api.md: the sections of the Hono middleware (the others pass bad input on purpose to
  // show what they throw, which the types refuse too).
  for (const s of sections(readFileSync(join(root, "docs/api.md"), "utf8")).filter((s) => s.name.startsWith("hono:"))) {
    s.examples.forEach((code, i) => put(`api-${s.name.replace(/\W/g, "_")}-${i}.mjs`, code));
  }
  const pkg = "../../pkg";
  writeFileSync(
    join(out, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: false, // the examples are plain JS as printed: checked for wrong calls and unknown members, not for implicit any
        noEmit: true,
        allowJs: true,
        checkJs: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2022", "DOM", "ESNext.Disposable"],
        types: ["node"],
        skipLibCheck: true,
        paths: { "edge-deadline": [`${pkg}/index.d.ts`], "edge-deadline/derive": [`${pkg}/derive-index.d.ts`], "edge-deadline/hono": [`${pkg}/hono.d.ts`] },
      },
      files,
    }, null, 2),
  );
  return join(out, "tsconfig.json");
}

const strictOut = join(root, "test-output/types-examples-strict");

// Every js block of docs/recipes.md and the README, and every docs/api.md example, is checked: none is
// left out. An example that shows what bad input throws marks that line `// @ts-expect-error`, so
// the check also proves the types refuse it (an unused directive is an error).
/**
 * Writes every js block of docs/recipes.md and the README, and docs/api.md's examples, with a tsconfig that type-checks
 * them under `--strict`, as a user's TypeScript project with checkJs would; returns the tsconfig's path.
 * Parameters carry JSDoc types in the docs; a type of a package not installed here (a Worker's
 * `ExecutionContext`, a Durable Object's state) is written there as a structural JSDoc type.
 */
export function writeStrictExamples() {
  rmSync(strictOut, { recursive: true, force: true });
  mkdirSync(strictOut, { recursive: true });
  const files = [];
  const put = (name, code) => {
    writeFileSync(join(strictOut, name), code);
    files.push(name);
  };
  const recipes = codeBlocks(readFileSync(join(root, "docs/recipes.md"), "utf8")).filter((b) => b.lang === "js");
  recipes.forEach((b, i) => put(`recipe-${i}-${b.heading.replace(/\W+/g, "_")}.mjs`, b.code));
  const readme = codeBlocks(readFileSync(join(root, "README.md"), "utf8")).filter((b) => b.lang === "js");
  readme.forEach((b, i) => put(`readme-${i}-${b.heading.replace(/\W+/g, "_")}.mjs`, b.code));
  const api = sections(readFileSync(join(root, "docs/api.md"), "utf8"));
  // Numbered: `Plan` and `plan` must not differ only in case on a case-insensitive file system.
  api.forEach((s, n) => s.examples.forEach((code, i) => put(`api-${n}-${s.name.replace(/\W/g, "_")}-${i}.mjs`, code)));
  const pkg = "../../pkg";
  writeFileSync(
    join(strictOut, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        allowJs: true,
        checkJs: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        moduleDetection: "force",
        lib: ["ES2022", "DOM", "DOM.AsyncIterable", "ESNext.Disposable"],
        types: ["node"],
        skipLibCheck: true,
        paths: { "edge-deadline": [`${pkg}/index.d.ts`], "edge-deadline/derive": [`${pkg}/derive-index.d.ts`], "edge-deadline/hono": [`${pkg}/hono.d.ts`], "edge-deadline/durable": [`${pkg}/durable.d.ts`] },
      },
      files: [...files, "../../tests/types/cloudflare-workers.d.ts", "../../tests/types/deno.d.ts"],
    }, null, 2),
  );
  return join(strictOut, "tsconfig.json");
}
