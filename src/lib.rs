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
//! Timers, `AbortController`s and streams are owned by the JavaScript layer in
//! `js/`, because only the host runtime can schedule work.

pub mod core;

#[cfg(target_arch = "wasm32")]
mod wasm;
