//! Which chunks of a Server-Sent Events body are progress: [`sse_progress`],
//! the meaning of the JavaScript `sseProgress` (`js/sse.js`).
//!
//! SSE servers send keep-alive comments (`: ping`) while the model is queued
//! or thinking, so that proxies do not time the connection out. To stall
//! detection those comments are silence: only lines that carry a field other
//! than `retry` (`data:`, `event:`, `id:`, …) are progress. The rule, and the
//! state kept between chunks, are the core's
//! ([`SseScan`](crate::core::sse::SseScan)); this file feeds it.
//!
//! # Invariants (the JavaScript predicate's)
//! 1. A chunk is progress iff it holds at least one character the core's
//!    rule calls progress (a line that is neither a comment, nor blank, nor
//!    only `retry`).
//! 2. Chunk boundaries do not change the answer for an event (the core's
//!    state: where in the line the scan is, and how much of a leading
//!    byte-order mark was seen).
//! 3. Bytes and text give the same answers: text is scanned as its UTF-8
//!    bytes, where CR, LF and `:` never occur inside a multi-byte character.

use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use super::Error;

use crate::core::sse::SseScan;

/// One stream's scan: the core's, fed each chunk's bytes through a reused buffer (one copy out of
/// JavaScript per chunk).
struct Scan {
    core: SseScan,
    buf: Vec<u8>,
}

impl Scan {
    fn bytes(&mut self, bytes: &Uint8Array) -> bool {
        let n = bytes.length() as usize;
        self.buf.resize(n, 0);
        bytes.copy_to(&mut self.buf[..n]);
        self.core.bytes(&self.buf[..n])
    }
}

/// A fresh SSE progress predicate with its own line state, for one stream:
/// pass it to [`StallOptions::is_progress`](super::StallOptions::is_progress)
/// or [`FetchOptions::is_progress`](super::FetchOptions::is_progress).
/// [`fetch_with_deadline`](super::fetch_with_deadline) uses one by default on
/// a `text/event-stream` response. Chunks are bytes (`Uint8Array`,
/// `ArrayBuffer`, any `ArrayBuffer` view) or text; anything else is an
/// [`Error::Js`] with a `TypeError` naming `chunk`.
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::sse_progress;
/// let mut is_progress = sse_progress();
/// assert!(!is_progress(&": ping\n\n".into())?);
/// assert!(is_progress(&"data: 1\n\n".into())?);
/// # Ok(())
/// # }
/// # fn main() {}
/// ```
pub fn sse_progress() -> impl FnMut(&JsValue) -> Result<bool, Error> + 'static {
    let mut scan = Scan { core: SseScan::new(), buf: Vec::new() };
    move |chunk: &JsValue| {
        if let Some(text) = chunk.as_string() {
            return Ok(scan.core.bytes(text.as_bytes()));
        }
        if let Some(bytes) = chunk.dyn_ref::<Uint8Array>() {
            return Ok(scan.bytes(bytes));
        }
        if let Some(buffer) = chunk.dyn_ref::<ArrayBuffer>() {
            return Ok(scan.bytes(&Uint8Array::new(buffer)));
        }
        if ArrayBuffer::is_view(chunk) {
            let get = |key: &str| js_sys::Reflect::get(chunk, &key.into()).unwrap_or_default();
            let buffer: ArrayBuffer = get("buffer").unchecked_into();
            let offset = get("byteOffset").as_f64().unwrap_or(0.0) as u32;
            let length = get("byteLength").as_f64().unwrap_or(0.0) as u32;
            return Ok(scan.bytes(&Uint8Array::new_with_byte_offset_and_length(&buffer, offset, length)));
        }
        Err(Error::Js(
            js_sys::TypeError::new("'chunk' of sse_progress must be a Uint8Array, an ArrayBuffer or a string").into(),
        ))
    }
}
