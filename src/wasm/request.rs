//! Bindings for [`crate::core::request`] (`js/request.js`, js/deadline.js).
//!
//! One scalar export, for size: a request's deadline is the existing
//! `platformDeadline` and `earliestIncoming` calls (src/wasm/caps.rs,
//! src/wasm/headers.rs) followed by [`request::fold`], which names the
//! winner; a deadline received over a wire is the same fold with the wire's
//! remaining time as the caller's. Limits cross as a [`Limit`], a
//! `#[wasm_bindgen]` enum: a number in the answer's array that both sides
//! name (js/request.js reads its names from `core.Limit`; the request case
//! checks every name round-trips). Measured on the main `.wasm`
//! (gzip), this one is the smallest: structured versions (serde options and
//! answers, a `Wire` record) cost the most, three scalar exports with names
//! crossing as strings less, and the Worker's upload budget has little room
//! (BENCHMARKS.md, "Where it stands").

use wasm_bindgen::prelude::*;

use super::within_js;
use crate::core::request::{self, LimitKind};

named_enum! {
    /// [`LimitKind`] as it crosses (`core.Limit` in JavaScript: `Limit.caller`
    /// is its number, `Limit[n]` the name that number stands for). The variants
    /// are spelled as JavaScript writes the names.
    #[allow(non_camel_case_types)]
    Limit for LimitKind { budget = Budget, platform = Platform, caller = Caller, client = Client, background = Background }
}

/// [`request::fold`]: `[at, limitAt, limit]`, the limit a [`Limit`]'s
/// number. `caller_limit`: the caller's limit ([`Limit::caller`] for a header, the
/// wire's own for a wire).
#[wasm_bindgen(js_name = requestFold)]
#[allow(clippy::too_many_arguments)] // scalar: serde versions cost the main .wasm the most (module docs; BENCHMARKS.md, "Where it stands")
pub fn request_fold(
    now_ms: f64,
    local_at: f64,
    local_is_budget: bool,
    caller_ms: Option<f64>,
    transit_ms: f64,
    caller_limit: Limit,
    client_gone: bool,
    reserve_ms: f64,
) -> Result<Vec<f64>, JsValue> {
    let local = if local_is_budget { LimitKind::Budget } else { LimitKind::Platform };
    let (at, limit_at, limit) =
        request::fold(now_ms, local_at, local, caller_ms, transit_ms, caller_limit.into(), client_gone, reserve_ms)
            .map_err(|e| within_js("options", &e))?;
    Ok(vec![at, limit_at, f64::from(Limit::from(limit) as u8)])
}
