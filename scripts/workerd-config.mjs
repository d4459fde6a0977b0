// The workerd configuration (capnp) every local workerd run uses: the test
// suite, the Hono suite and the benchmarks. One worker named "main" on
// 127.0.0.1:`port`; with `loopback`, its fetch() may reach 127.0.0.1 (workerd
// needs an outbound network service that allows it).

/**
 * @param {{ port: number, modules: { name: string, path: string }[], compatibilityDate: string,
 *   flags?: string[], loopback?: boolean }} options `path` relative to the config file;
 *   a `.wasm` module is embedded as a WebAssembly.Module, a `.json` one as
 *   JSON (imported `with { type: "json" }`), anything else as an ES module.
 * @returns {string} the config file's text
 */
export function workerdConfig({ port, modules, compatibilityDate, flags = [], loopback = false }) {
  const embedded = modules.map(({ name, path }) => `(name = "${name}", ${name.endsWith(".wasm") ? "wasm" : name.endsWith(".json") ? "json" : "esModule"} = embed "${path}")`);
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .main),${loopback ? `\n    (name = "loopback", network = (allow = ["public", "private", "local"])),` : ""}
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const main :Workerd.Worker = (
  modules = [ ${embedded.join(",\n    ")} ],
  compatibilityDate = "${compatibilityDate}",
  compatibilityFlags = [${flags.map((f) => JSON.stringify(f)).join(", ")}],${loopback ? `\n  globalOutbound = "loopback",` : ""}
);
`;
}
