//! The Rust API's hot paths, exported for bench/web.bench.mjs, which times
//! them against the JavaScript API in the same process.
#![cfg(all(target_arch = "wasm32", feature = "web"))]

use edge_deadline::web::{fetch_with_deadline, with_stall_timeout, Deadline, FetchOptions, RetryOptions, StallOptions};
use wasm_bindgen::prelude::*;
use web_sys::{AbortSignal, ReadableStream};

/// `n` times: `Deadline::in_ms(10_000).signal()`, then drop (all inside Wasm).
#[wasm_bindgen(js_name = signalDrop)]
pub fn signal_drop(n: u32) {
    for _ in 0..n {
        let d = Deadline::in_ms(10_000.0).unwrap_throw();
        d.signal();
    }
}

/// The same with a parent signal linked.
#[wasm_bindgen(js_name = signalDropLinked)]
pub fn signal_drop_linked(n: u32, parent: &AbortSignal) {
    for _ in 0..n {
        let d = Deadline::in_ms(10_000.0).unwrap_throw().with_parent(parent);
        d.signal();
    }
}

/// `with_stall_timeout` with limits no chunk comes near (the healthy path).
#[wasm_bindgen(js_name = withStall)]
pub fn with_stall(stream: ReadableStream) -> Result<ReadableStream, JsValue> {
    with_stall_timeout(stream, StallOptions::new(60_000.0, 60_000.0)).map_err(JsValue::from)
}

/// `fetch_with_deadline` of `url` with limits no chunk comes near: with
/// `retry` (the resumable read, the core's streamed-read machine) or without
/// (one request, its body under the stall guard). Its Response's body.
#[wasm_bindgen(js_name = fetchBody)]
pub fn fetch_body(url: String, retry: bool) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let d = Deadline::in_ms(200_000.0)?;
        let mut options = FetchOptions::new(&d).first_chunk_ms(60_000.0).stall_ms(60_000.0);
        if retry {
            options = options.retry(RetryOptions::new(100.0));
        }
        let response = fetch_with_deadline(&url.into(), None, options).await?;
        Ok(response.body().map_or(JsValue::NULL, JsValue::from))
    })
}
