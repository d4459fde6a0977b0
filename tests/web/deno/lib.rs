//! The web API's cases (tests/web/cases/) exported for `deno test`
//! (tests/web/deno/web.test.js): `caseNames()` lists them, `runCase(name,
//! fixtureUrl)` runs one and rejects with its failure. `openDeadlines()`
//! leaves deadlines and an unref'd timer pending, for the check that a
//! process with open deadlines still exits.
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
