// Bundles main.js for browsers into dist/:
//   npm install edge-deadline && npm install -D esbuild && node build.mjs
// then serve this directory (the .wasm as application/wasm) and open index.html.
import * as esbuild from "esbuild";

const result = await esbuild.build({
  entryPoints: ["main.js"],
  bundle: true,
  format: "esm", // init() and main.js use top-level await
  platform: "browser", // the `browser` export condition
  target: "es2022",
  minify: true,
  outdir: "dist",
  loader: { ".wasm": "file" }, // `import wasmUrl from "edge-deadline/edge_deadline_bg.wasm"`
  assetNames: "[name]-[hash]",
  metafile: true,
});
console.log(await esbuild.analyzeMetafile(result.metafile));
