//! Bindings for [`crate::core::resume`] (`js/resume.js`).
//!
//! The host keeps the machine's few flags itself and asks once per failure,
//! with scalars: a resumable read fails rarely, and a class would add its
//! glue to every Worker that imports `relay`.

use wasm_bindgen::prelude::*;

use crate::core::resume::{Delivered, Resume};

/// What to do after a failure the retry loop allows another attempt for
/// ([`Resume::after_failure`]): `bits` are [`crate::core::resume::flags`],
/// `resumes` how often the read resumed after content. Answers the
/// [`Next`](crate::core::resume::Next) as its number (0 retry, 1
/// Last-Event-ID, 2 hook, 3 end) plus 4 × the wait in ms.
#[wasm_bindgen(js_name = resumeNext)]
pub fn resume_next(bits: u32, resumes: u32, delay_ms: f64, server_wait_ms: Option<f64>) -> f64 {
    let mut r = Resume::from_flags(bits, resumes);
    let (next, wait) = r.after_failure(Delivered::from_flags(bits), delay_ms, server_wait_ms);
    // The wait in whole ms (a timer's resolution), the answer in the low bits.
    (wait.ceil().min(2f64.powi(50))) * 4.0 + f64::from(next as u8)
}

/// How a stream's non-ok status failed, unless `classify` says otherwise
/// ([`status_failure`](crate::core::resume::status_failure)): the core's word.
#[wasm_bindgen(js_name = statusFailure)]
pub fn status_failure(status: u16) -> String {
    crate::core::resume::status_failure(status).as_str().to_string()
}

/// [`resume_refusal`](crate::core::resume::resume_refusal) with the
/// answer's `Content-Range` header as it came (`undefined` when absent): the
/// refusal's word, or `undefined` when the answer may be spliced.
#[wasm_bindgen(js_name = resumeRefusal)]
pub fn resume_refusal(
    by_id: bool,
    stream_is_sse: bool,
    status: u16,
    event_stream: bool,
    content_range: Option<String>,
    delivered: f64,
) -> Option<String> {
    let start = content_range.as_deref().and_then(crate::core::resume::content_range_start);
    crate::core::resume::resume_refusal(by_id, stream_is_sse, status, event_stream, start, delivered)
        .map(str::to_string)
}

/// A stream's cap for `maxLineBytes` (`line`) or `maxEventBytes` as the
/// caller gave it (`undefined`: the core's default,
/// [`MAX_LINE_BYTES`](crate::core::resume::MAX_LINE_BYTES) or
/// [`MAX_EVENT_BYTES`](crate::core::resume::MAX_EVENT_BYTES)), checked
/// ([`check_cap`](crate::core::resume::check_cap)): the bytes, or the core's
/// RangeError naming `options.maxLineBytes` or `options.maxEventBytes`.
#[wasm_bindgen(js_name = resumeCap)]
pub fn resume_cap(line: bool, value: Option<f64>) -> Result<f64, JsValue> {
    use crate::core::resume::{check_cap, MAX_EVENT_BYTES, MAX_LINE_BYTES};
    let (param, default) =
        if line { ("options.maxLineBytes", MAX_LINE_BYTES) } else { ("options.maxEventBytes", MAX_EVENT_BYTES) };
    match value {
        None => Ok(default as f64),
        Some(v) => check_cap(param, v).map(|c| c as f64).map_err(super::to_js),
    }
}

/// The message of a read that ended after content with no way to resume
/// it, `bytes` delivered ([`not_resumable`](crate::core::resume::not_resumable)).
#[wasm_bindgen(js_name = resumeEndMessage)]
pub fn resume_end_message(bytes: f64) -> String {
    crate::core::resume::not_resumable(bytes).to_string()
}

/// The message of a stream refused past a cap
/// ([`CutRefusal::message`](crate::core::resume::CutRefusal::message)):
/// `line` for the line cap, else the event cap, of `cap` bytes.
#[wasm_bindgen(js_name = resumeCapMessage)]
pub fn resume_cap_message(line: bool, cap: f64) -> String {
    use crate::core::resume::CutRefusal;
    let refusal = if line { CutRefusal::LineTooLong } else { CutRefusal::EventTooLarge };
    refusal.message(cap).to_string()
}
