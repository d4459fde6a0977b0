// Loads a recipe of docs/recipes.md exactly as printed: its code block is
// written to a temp project whose node_modules resolve `edge-deadline` to the
// built package (pkg/) and the SDKs to this repository's devDependencies, then
// imported. What the recipe reads from the environment is set first.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { jsBlockUnder } from "../support/markdown.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const dirs = [];

/** The recipe under the heading starting with `heading`, imported as a module. */
export async function loadRecipe(heading, env = {}) {
  const code = jsBlockUnder(readFileSync(join(root, "docs/recipes.md"), "utf8"), heading);
  const dir = mkdtempSync(join(tmpdir(), "edge-deadline-recipe-"));
  dirs.push(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(join(root, "pkg"), join(dir, "node_modules/edge-deadline"), "dir");
  for (const dep of ["openai", "ai"]) symlinkSync(join(root, "node_modules", dep), join(dir, "node_modules", dep), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  writeFileSync(join(dir, "recipe.mjs"), code);
  Object.assign(process.env, env);
  return import(pathToFileURL(join(dir, "recipe.mjs")).href);
}

/** Removes the temp projects. */
export function cleanup() {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}
