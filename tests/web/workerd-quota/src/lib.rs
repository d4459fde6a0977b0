//! A Rust Worker for tests/web/workerd.test.mjs (plain wasm-bindgen, entry
//! shim.mjs): `GET /?n=N` derives N deadlines from one root deadline in one
//! request, each with its signal armed, half of them after an `await` (a
//! later turn of the same request), and answers how many it armed or the
//! error that stopped it. `GET /turns?n=N` makes and drops a deadline and
//! a stall wrapper (drained) in each of N turns of one request. workerd
//! allows a request a limited number of pending timers (10 000): deadlines
//! that armed a host timer each, or queues that kept one armed once empty,
//! would meet it.
use edge_deadline::web::{with_stall_timeout, Deadline, StallOptions};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// `{ reserves, mins, aborted, error? }` as JSON text.
#[wasm_bindgen]
pub async fn many(n: u32) -> String {
    let root = match Deadline::in_ms(60_000.0) {
        Ok(d) => d,
        Err(e) => return format!(r#"{{"error":"{e}"}}"#),
    };
    root.signal();
    let mut kept = Vec::with_capacity(n as usize);
    let mut reserves = 0;
    for i in 0..n / 2 {
        match root.reserve(f64::from(i % 1_000)) {
            Ok(d) => {
                d.signal();
                kept.push(d);
                reserves += 1;
            }
            Err(e) => return format!(r#"{{"reserves":{reserves},"error":"{e}"}}"#),
        }
    }
    // A later turn of the same request.
    let _ = JsFuture::from(js_sys::Promise::resolve(&JsValue::UNDEFINED)).await;
    let mut mins = 0;
    for i in 0..n - n / 2 {
        let Ok(other) = Deadline::in_ms(30_000.0 + f64::from(i % 1_000)) else { break };
        let d = root.min(&other);
        d.signal();
        kept.push(d);
        mins += 1;
    }
    let aborted = kept.iter().filter(|d| d.signal().aborted()).count();
    format!(r#"{{"reserves":{reserves},"mins":{mins},"aborted":{aborted}}}"#)
}

/// `{ turns, error? }` as JSON text: `n` turns, each making a deadline (its
/// signal armed) and a stall wrapper over a one-chunk stream, both dropped
/// by the end of the turn.
#[wasm_bindgen]
pub async fn turns(n: u32) -> String {
    let chunk = js_sys::Uint8Array::new_with_length(4);
    for i in 0..n {
        match Deadline::in_ms(60_000.0) {
            Ok(d) => drop(d.signal()),
            Err(e) => return format!(r#"{{"turns":{i},"error":"{e}"}}"#),
        }
        let source = match one_chunk(&chunk) {
            Ok(s) => s,
            Err(e) => return format!(r#"{{"turns":{i},"error":"source: {e:?}"}}"#),
        };
        let wrapped = match with_stall_timeout(source, StallOptions::new(60_000.0, 60_000.0)) {
            Ok(w) => w,
            Err(e) => return format!(r#"{{"turns":{i},"error":"{e}"}}"#),
        };
        let reader: web_sys::ReadableStreamDefaultReader = wrapped.get_reader().unchecked_into();
        loop {
            match JsFuture::from(reader.read()).await {
                Ok(r) if js_sys::Reflect::get(&r, &"done".into()).ok() == Some(JsValue::TRUE) => break,
                Ok(_) => {}
                Err(e) => {
                    return format!(
                        r#"{{"turns":{i},"error":"read: {}"}}"#,
                        js_sys::JSON::stringify(&e).ok().and_then(|s| s.as_string()).unwrap_or_default()
                    )
                }
            }
        }
    }
    format!(r#"{{"turns":{n}}}"#)
}

/// A stream that gives `chunk` once, then closes.
fn one_chunk(chunk: &js_sys::Uint8Array) -> Result<web_sys::ReadableStream, JsValue> {
    let source = js_sys::Object::new();
    let chunk = chunk.clone();
    let pull = Closure::<dyn FnMut(web_sys::ReadableStreamDefaultController)>::new(
        move |c: web_sys::ReadableStreamDefaultController| {
            let _ = c.enqueue_with_chunk(&chunk);
            let _ = c.close();
        },
    );
    js_sys::Reflect::set(&source, &"pull".into(), &pull.into_js_value())?;
    web_sys::ReadableStream::new_with_underlying_source(&source)
}
