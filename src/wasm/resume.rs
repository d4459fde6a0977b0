//! Bindings for [`crate::core::resume`] (`js/resume.js`): a stream's caps
//! as the caller gives them, and the message of a refusal past one. The
//! decisions of a resumable read are the streamed-read machine's
//! (src/wasm/read.rs `ReadMachine`).

use wasm_bindgen::prelude::*;

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

/// The message of a stream refused past a cap
/// ([`CutRefusal::message`](crate::core::resume::CutRefusal::message)):
/// `line` for the line cap, else the event cap, of `cap` bytes.
#[wasm_bindgen(js_name = resumeCapMessage)]
pub fn resume_cap_message(line: bool, cap: f64) -> String {
    use crate::core::resume::CutRefusal;
    let refusal = if line { CutRefusal::LineTooLong } else { CutRefusal::EventTooLarge };
    refusal.message(cap).to_string()
}
