//! Bindings for [`crate::core::stall`]. Names are the JS API's.
//!
//! # Scalar where it is hot, typed where it is not
//! `js/stall.js` asks the core once when a stream is wrapped (which also
//! validates the limits) and then only when its one wake-up comes: never per
//! chunk. The common answer is "nothing expired, look again in `delayMs`",
//! which crosses as one number ([`stall_wake`]: `number | undefined`); only
//! when that is `undefined` (once per stream: the verdict) does the wrapper
//! ask for the [`Decision`] itself, a typed object generated from the Rust
//! type ([`stall_decision`]: `{ kind: "stalled", phase, afterMs, chunks,
//! bytes }` or `{ kind: "deadlineExceeded", lateByMs }`). So no code table and
//! no positional layout is mirrored in JavaScript, and the wake, which a
//! bursty stream asks for every `sampleMs`, costs no allocation.
//!
//! Measured (BENCHMARKS.md, "The deadline and stall boundary": `node
//! bench/ab.mjs`, both builds in one process, and `node bench/run.mjs
//! stream`): `withStallTimeout` per chunk 1056 → 1031 ns in Node, 453 → 457
//! ns in Deno on the loaded 2-core machine, within noise; the typed verdict
//! adds 0.9 KB gzip to the .wasm.
//!
//! Errors cross through [`super::to_js`]: a `RangeError` with `.param` as the
//! JS user wrote it (`"options.firstChunkMs"`) and `.code`.

use wasm_bindgen::prelude::*;

use super::{into_js, to_js};
use crate::core::deadline::MAX_MS;
use crate::core::stall::{Decision, Snapshot, StallConfig, StallError};

/// The npm package's names for the two limits.
const OPTIONS: [&str; 2] = ["options.firstChunkMs", "options.stallMs"];
/// The wait for headers: `firstByteMs` as the first-chunk wait.
const FIRST_BYTE: [&str; 2] = ["options.firstByteMs", "options.stallMs"];

#[allow(clippy::too_many_arguments)]
fn decide(
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
    started_at: f64,
    last_progress_at: Option<f64>,
    chunks: f64,
    bytes: f64,
    now_ms: f64,
) -> Result<Decision, StallError> {
    let config = StallConfig::named(first_chunk_ms, stall_ms, deadline_at, OPTIONS)?;
    config.decide(&Snapshot { started_at, last_progress_at, chunks, bytes }, now_ms)
}

/// Validates the limits and the snapshot, then decides at `now_ms`
/// ([`StallConfig::decide`]): the delay to wait before asking again (a whole
/// number ≥ 1), or `undefined` when a verdict is due (ask [`stall_decision`]).
/// `deadline_at` and `last_progress_at` are `undefined` when absent.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = stallWake)]
pub fn stall_wake(
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
    started_at: f64,
    last_progress_at: Option<f64>,
    chunks: f64,
    bytes: f64,
    now_ms: f64,
) -> Result<Option<f64>, JsValue> {
    match decide(first_chunk_ms, stall_ms, deadline_at, started_at, last_progress_at, chunks, bytes, now_ms) {
        Ok(Decision::Wake { delay_ms, .. }) => Ok(Some(delay_ms)),
        Ok(_) => Ok(None),
        Err(error) => Err(to_js(error)),
    }
}

/// The same decision as [`stall_wake`], as the typed [`Decision`]: for the
/// verdict, once per stream.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = stallDecision, unchecked_return_type = "Decision")]
pub fn stall_decision(
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
    started_at: f64,
    last_progress_at: Option<f64>,
    chunks: f64,
    bytes: f64,
    now_ms: f64,
) -> Result<JsValue, JsValue> {
    let decision = decide(first_chunk_ms, stall_ms, deadline_at, started_at, last_progress_at, chunks, bytes, now_ms)
        .map_err(to_js)?;
    into_js(&decision)
}

/// The wait for response headers (`fetchWithDeadline`'s `firstByteMs`): the
/// same decision with `firstByteMs` as the first-chunk wait and nothing
/// received. The delay to wait, or `undefined` once the wait has run out
/// (at once for `firstByteMs` 0: no time was left to wait); the silence is
/// then `nowMs − startedAt`. Bad input names `options.firstByteMs`.
#[wasm_bindgen(js_name = firstByteWake)]
pub fn first_byte_wake(first_byte_ms: f64, started_at: f64, now_ms: f64) -> Result<Option<f64>, JsValue> {
    // Nothing is ever received, so the gap limit never applies: the largest one.
    let config = StallConfig::named(first_byte_ms, MAX_MS, None, FIRST_BYTE).map_err(to_js)?;
    match config.decide(&Snapshot::started(started_at), now_ms).map_err(to_js)? {
        Decision::Wake { delay_ms, .. } => Ok(Some(delay_ms)),
        _ => Ok(None),
    }
}
