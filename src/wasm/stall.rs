//! Bindings for [`crate::core::stall`]. Names are the JS API's.
//!
//! `js/stall.js` calls [`stall_decide`] once when a stream is wrapped (which
//! also validates the limits) and then only when its one timer fires: never per
//! chunk. The answer crosses the boundary as four numbers in one call, so
//! reading it costs no further Wasm calls (a `#[wasm_bindgen]` struct would
//! cost one per field and a `free()`).

use wasm_bindgen::prelude::*;

use super::{legacy_to_js, JsFailure};
use crate::core::deadline::MAX_MS;
use crate::core::stall::{Decision, Phase, Snapshot, StallConfig, StallError};

/// `[kind, …]` codes of [`stall_decide`]'s answer; `js/stall.js` mirrors them.
const WAKE: f64 = 0.0;
const STALLED_FIRST_CHUNK: f64 = 1.0;
const STALLED: f64 = 2.0;
const DEADLINE: f64 = 3.0;

/// Every stall error is bad input naming its parameter: a `RangeError`.
impl From<StallError> for JsFailure {
    fn from(error: StallError) -> Self {
        Self::Range(error.to_string())
    }
}

/// Validates the limits and the snapshot, then decides at `now_ms`
/// ([`StallConfig::decide`]). `deadline_at` and `last_progress_at` are
/// `undefined` when absent. The answer, as `Float64Array`:
///
/// - `[0, delayMs, atMs, phase]`: nothing expired; arm one timer for `delayMs`
///   (`phase`: 1 first chunk, 2 stall, 3 deadline, the limit due at `atMs`);
/// - `[1, afterMs, chunks, bytes]`: stalled before the first progress chunk;
/// - `[2, afterMs, chunks, bytes]`: stalled after progress;
/// - `[3, lateByMs, 0, 0]`: the deadline passed.
///
/// Throws a `RangeError` naming the parameter for any invalid input.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = stallDecide)]
pub fn stall_decide(
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
    started_at: f64,
    last_progress_at: Option<f64>,
    chunks: f64,
    bytes: f64,
    now_ms: f64,
) -> Result<Vec<f64>, JsValue> {
    let config = StallConfig::new(first_chunk_ms, stall_ms, deadline_at).map_err(legacy_to_js)?;
    let snapshot = Snapshot { started_at, last_progress_at, chunks, bytes };
    let decision = config.decide(&snapshot, now_ms).map_err(legacy_to_js)?;
    Ok(encode(decision))
}

/// The wait for response headers (`fetchWithDeadline`'s `firstByteMs`): the
/// same decision with `firstByteMs` as the first-chunk wait and nothing
/// received, so the answer is a wake or `[1, afterMs, 0, 0]` (at once for
/// `firstByteMs` 0: no time was left to wait). Bad input names `firstByteMs`.
#[wasm_bindgen(js_name = firstByteDecide)]
pub fn first_byte_decide(first_byte_ms: f64, started_at: f64, now_ms: f64) -> Result<Vec<f64>, JsValue> {
    let rename = |error: StallError| match error {
        StallError::Wait { value, .. } => StallError::Wait { param: "firstByteMs", value },
        other => other,
    };
    // Nothing is ever received, so the gap limit never applies: the largest one.
    let config = StallConfig::new(first_byte_ms, MAX_MS, None).map_err(rename).map_err(legacy_to_js)?;
    let decision = config.decide(&Snapshot::started(started_at), now_ms).map_err(legacy_to_js)?;
    Ok(encode(decision))
}

fn encode(decision: Decision) -> Vec<f64> {
    match decision {
        Decision::Wake { at_ms, delay_ms, phase } => vec![WAKE, delay_ms, at_ms, phase_code(phase)],
        Decision::Stalled { phase, after_ms, chunks, bytes } => vec![phase_code(phase), after_ms, chunks, bytes],
        Decision::DeadlineExceeded { late_by_ms } => vec![DEADLINE, late_by_ms, 0.0, 0.0],
    }
}

fn phase_code(phase: Phase) -> f64 {
    match phase {
        Phase::FirstChunk => STALLED_FIRST_CHUNK,
        Phase::Stall => STALLED,
        Phase::Deadline => DEADLINE,
    }
}
