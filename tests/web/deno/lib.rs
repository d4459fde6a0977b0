//! The web API's cases (tests/web/cases/) exported for `deno test`
//! (tests/web/deno/web.test.js): `caseNames()` lists them, `runCase(name,
//! fixtureUrl)` runs one and rejects with its failure. `openDeadlines()`
//! leaves deadlines and an unref'd timer pending, for the check that a
//! process with open deadlines still exits; `resumableStatus(url)` awaits a
//! resumable read, for the check that a process waiting on it stays alive.
#![cfg(all(target_arch = "wasm32", feature = "web"))]

use edge_deadline::web::{Deadline, Timeout};
use wasm_bindgen::prelude::*;

#[path = "../cases/mod.rs"]
mod cases;

macro_rules! exports {
    ($($module:ident :: $name:ident),* $(,)?) => {
        #[wasm_bindgen(js_name = caseNames)]
        pub fn case_names() -> Vec<String> {
            vec![$(format!("{}::{}", stringify!($module), stringify!($name))),*]
        }

        #[wasm_bindgen(js_name = runCase)]
        pub async fn run_case(name: String, fixture: Option<String>) -> Result<(), JsValue> {
            let ctx = cases::Ctx { fixture };
            let outcome = match name.as_str() {
                $(n if n == format!("{}::{}", stringify!($module), stringify!($name)) => cases::$module::$name(&ctx).await,)*
                _ => Err(format!("no case named {name}")),
            };
            outcome.map_err(|message| js_sys::Error::new(&message).into())
        }
    };
}

for_each_case!(exports);

/// Leaves three deadlines with signals (60 s, one with a parent) and an
/// unref'd 60 s Timeout pending, as a request handler that forgot them would.
#[wasm_bindgen(js_name = openDeadlines)]
pub fn open_deadlines() {
    let parent = web_sys::AbortController::new().unwrap();
    for d in [
        Deadline::in_ms(60_000.0).unwrap(),
        Deadline::in_ms(30_000.0).unwrap(),
        Deadline::in_ms(90_000.0).unwrap().with_parent(&parent.signal()),
    ] {
        d.signal();
        std::mem::forget(d);
    }
    std::mem::forget(Timeout::new(60_000.0, || {}).unwrap().unref());
}

/// `fetch_with_deadline` of `url` with `retry` (a resumable read), its body
/// left unread: the answer's status. For the check that a process awaiting
/// it through a backoff (an unref'd timer) stays alive, then exits.
#[wasm_bindgen(js_name = resumableStatus)]
pub async fn resumable_status(url: String) -> Result<u16, JsValue> {
    use edge_deadline::web::{fetch_with_deadline, FetchOptions, RetryOptions};
    let d = Deadline::in_ms(10_000.0)?;
    let options = FetchOptions::new(&d).stall_ms(2_000.0).retry(RetryOptions::new(100.0));
    Ok(fetch_with_deadline(&url.into(), None, options).await?.status())
}

/// `Error::from(value).is_timeout()`: `web.test.js` checks that it answers
/// as the npm package's `isTimeout` on the same values.
#[wasm_bindgen(js_name = rustIsTimeout)]
pub fn rust_is_timeout(value: JsValue) -> bool {
    edge_deadline::web::Error::from(value).is_timeout()
}

/// One of each branded error the Rust API makes, as JavaScript values, with
/// the signal of an expired deadline last: `web.test.js` checks them with the
/// npm package's own guards (`isDeadlineExceeded`, `isStreamStalled`, …).
#[wasm_bindgen(js_name = brandedErrors)]
pub fn branded_errors() -> js_sys::Array {
    use edge_deadline::web::{Error, StallPhase};
    let list = js_sys::Array::new();
    for e in [
        Error::DeadlineExceeded { at: 5.0, late_by_ms: 1.0 },
        Error::InsufficientBudget { remaining_ms: 3.0, min_ms: 10.0 },
        Error::StreamStalled { phase: StallPhase::Stall, after_ms: 30.0, chunks: 2.0, bytes: 32.0 },
        Error::StepTimeout { step: "search".into(), cap_ms: 250.0 },
        Error::RetryFailed {
            reason: "exhausted".into(),
            message: "retry stopped after 0 attempts".into(),
            attempts: vec![],
            last: None,
            retry_after_ms: None,
            remaining_ms: None,
        },
        Error::AttemptTimeout { attempt: 1, timeout_ms: 30.0 },
        Error::InvalidHeader {
            header: "grpc-timeout",
            code: "HEADER_EMPTY",
            message: "'grpc-timeout' must not be empty".into(),
        },
    ] {
        list.push(&JsValue::from(e));
    }
    list.push(&Deadline::at(0.0).unwrap().signal().reason());
    list
}
