// The package as users get it: builds pkg/ (scripts/build.mjs), then
// `npm pack`s it into dist/ and prints the tarball's size and file list.
//
//   node scripts/pack.mjs              build, then pack into dist/
//   node scripts/pack.mjs --no-build   pack the pkg/ that is there
//
// tests/package imports `pack()` to pack into its own temp directory.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/**
 * `npm pack` of pkg/ into `outDir`.
 * @returns {{ tarball: string, size: number, unpackedSize: number, files: { path: string, size: number, mode: number }[], integrity: string }}
 */
export function pack({ pkgDir = join(root, "pkg"), outDir = join(root, "dist") } = {}) {
  mkdirSync(outDir, { recursive: true });
  const json = execFileSync(npm, ["pack", "--json", "--pack-destination", outDir], {
    cwd: pkgDir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" },
  });
  const [info] = JSON.parse(json);
  return {
    tarball: join(outDir, info.filename),
    size: info.size,
    unpackedSize: info.unpackedSize,
    files: info.files,
    integrity: info.integrity,
  };
}

const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (!process.argv.includes("--no-build")) {
    execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" });
  }
  const p = pack();
  for (const f of p.files) console.log(`  ${String(f.size).padStart(8)} B  ${f.path}`);
  console.log(`${p.tarball}: ${p.size} B (${kb(p.size)}) packed, ${kb(p.unpackedSize)} unpacked, ${p.files.length} files`);
}
