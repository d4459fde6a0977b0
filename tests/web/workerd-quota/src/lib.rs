//! A Rust Worker for tests/web/workerd.test.mjs (plain wasm-bindgen, entry
//! shim.mjs): `GET /?n=N` derives N deadlines from one root deadline in one
//! request, each with its signal armed, half of them after an `await` (a
//! later turn of the same request), and answers how many it armed or the
//! error that stopped it. workerd allows a request a limited number of
//! pending timers: deadlines that armed a host timer each would meet it.
use edge_deadline::web::Deadline;
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
