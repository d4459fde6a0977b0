//! edge-deadline: deadlines, budgets, stall detection and data-derived timeouts
//! for edge runtimes.
//!
//! The crate has two layers, and the split is the design:
//!
//! - [`core`] is pure arithmetic and state machines. It never reads a clock
//!   (every function takes `now_ms`), never touches JavaScript, and never
//!   panics on input: every fallible function returns a `Result`. It is tested
//!   on the host with plain `cargo test`.
//! - `wasm` (compiled only for `wasm32`) holds the `#[wasm_bindgen]` exports:
//!   convert the arguments, call the core, convert the result. No logic lives
//!   there.
//!
//! - `web` (the `web` cargo feature, wasm32 only) is the Rust API for Rust
//!   code on the edge (Cloudflare Workers through workers-rs or plain
//!   wasm-bindgen, Rust apps in browsers, Rust in Deno): deadlines with
//!   `AbortSignal`s, owned timers, stall guards, fetch, plans, retries,
//!   propagation headers and platform caps, on web-sys objects. It drives the
//!   same [`core`] the JavaScript API drives; it owns only what needs the host
//!   (the clock, timers, signals, streams).
//!
//! For JavaScript users, timers, `AbortController`s and streams are owned by
//! the JavaScript layer in `js/`, because only the host runtime can schedule
//! work.
//!
//! # Features
//! - `web`: the Rust API in [`web`](web/index.html) (wasm32 only; on other targets the
//!   feature adds nothing). Enabling it also leaves the npm package's own
//!   `#[wasm_bindgen]` exports out of the build: they import the package's
//!   `errors.js`, and a Rust application has none.
//! - `main` (default) and `derive`: which of the npm package's exports a
//!   wasm32 build carries, one `.wasm` each (wasm-pack.toml): `main` for the
//!   `edge-deadline` entry (deadlines, plans, retries, hedging, propagation,
//!   caps, stall detection), `derive` for `edge-deadline/derive` (sketch,
//!   derivation, Prometheus, tail shape, simulate, Little's law). Neither
//!   changes the core, which every build has whole; the linker drops what no
//!   export reaches.

#![warn(missing_docs)]

pub mod core;

// The npm package's boundary. Not with `web`: its exports, its start hook and
// its `./errors.js` import would land in the Rust user's module.
#[cfg(all(target_arch = "wasm32", not(feature = "web")))]
mod wasm;

#[cfg(all(target_arch = "wasm32", feature = "web"))]
pub mod web;
