//! Bindings for [`crate::core::plan`] (`js/plan.js`).
//!
//! # What crosses, and how
//! - `plan(deadline, steps, options)` is a cold call: the steps cross as
//!   [`StepSpec`] objects through serde ([`super::de`]), and the validated plan
//!   comes back as a [`PlanInfo`](crate::core::plan::PlanInfo) (TypeScript generated from the Rust types).
//!   The `Plan` is dropped before the call returns: a JS plan holds no Wasm
//!   memory, whatever happens to it.
//! - [`plan_cap`] is the hot path, called by every `p.run`: scalars in, one
//!   `f64` out (the cap, or `0` when the step must not start), no allocation.
//!   Passing the step as an object instead runs serde on every step: the
//!   refusal below measured slower in Node that way than with scalars
//!   (BENCHMARKS.md, "Pipelines", has the current figures).
//! - A skip makes no call of its own: `p.run` skips an optional step on
//!   [`plan_cap`]'s `0`, and the reason's text ([`skip_reason_text`], the
//!   core's [`plan::skip_reason`] of the same numbers) is made when the caller
//!   first reads it. Returning the text at once, or the
//!   [`Refusal`](crate::core::plan::Refusal) object (its kind by name in, four
//!   fields out through serde), measured a skipped `p.run` slower
//!   (BENCHMARKS.md, "Pipelines" and "Where it stands").
//! - [`plan_refusal`] is the rare path for a mandatory or fallback step: why
//!   it does not start, as a [`Refusal`](crate::core::plan::Refusal) whose
//!   `outcome` is the trace's string enum and whose numbers the
//!   `InsufficientBudget` error carries. The step's numbers cross as scalars
//!   and its kind by name.

use wasm_bindgen::prelude::*;

use super::{into_js, to_js, within_js};
use crate::core::error::ShapeError;
use crate::core::plan::{self, Plan, SkipReason, StepInfo, StepKind, StepSpec, DEFAULT_MARGIN_MS};

/// Validates a plan ([`Plan::with_margin`], `marginMs` defaulting to
/// [`DEFAULT_MARGIN_MS`]) and returns what `js/plan.js` keeps of it.
#[wasm_bindgen(js_name = planNew, unchecked_return_type = "PlanInfo")]
pub fn plan_new(
    at: f64,
    now_ms: f64,
    #[wasm_bindgen(unchecked_param_type = "StepSpec[]")] steps: Vec<JsValue>,
    margin_ms: Option<f64>,
) -> Result<JsValue, JsValue> {
    let mut specs = Vec::with_capacity(steps.len());
    for (index, step) in steps.into_iter().enumerate() {
        specs.push(step_spec(index, step)?);
    }
    let plan = Plan::with_margin(at, now_ms, specs, margin_ms.unwrap_or(DEFAULT_MARGIN_MS)).map_err(to_js)?;
    into_js(&plan.info())
}

/// One step through serde. `js/plan.js` checks every field's type first, so
/// what serde refuses here is a `kind` it does not know: the core's
/// [`StepKind::parse`] then names it (`steps[2].kind`). Anything else (a
/// getter that changed its answer or threw) is a wrong shape.
fn step_spec(index: usize, step: JsValue) -> Result<StepSpec, JsValue> {
    super::de::from_value(step.clone()).map_err(|e| {
        let kind = js_sys::Reflect::get(&step, &JsValue::from_str("kind")).ok().and_then(|k| k.as_string());
        match kind.map(|k| StepKind::parse(&k)) {
            Some(Err(error)) => within_js(&format!("steps[{index}]"), &error),
            _ => to_js(ShapeError { param: "steps", detail: e.describe(&format!("steps[{index}]")) }),
        }
    })
}

/// The message of a `StepTimeout` ([`plan::step_timeout`]).
#[wasm_bindgen(js_name = stepTimeoutText)]
pub fn step_timeout_text(step: &str, cap_ms: f64) -> String {
    plan::step_timeout(step, cap_ms).to_string()
}

/// [`plan::step_cap`]: the cap of a step from [`plan_new`]'s numbers at
/// `now_ms`, or `0` when it must not start. `fallback` is `kind ===
/// "fallback"`, the one distinction admission makes.
#[wasm_bindgen(js_name = planCap)]
pub fn plan_cap(
    fallback: bool,
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_after_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<f64, JsValue> {
    plan::step_cap(fallback, min_ms, preferred_ms, held_after_ms, at, now_ms).map_err(to_js)
}

/// [`plan::cap_is_deadline`]: whether a step's cap, reached at `cap_at`, is
/// the deadline `at` (asked when the cap fires or a streamed step ends).
#[wasm_bindgen(js_name = capIsDeadline)]
pub fn cap_is_deadline(cap_at: f64, at: f64) -> bool {
    plan::cap_is_deadline(cap_at, at)
}

/// The text of [`plan::skip_reason`]: why an optional step (its
/// [`plan_new`] numbers) is skipped at `now_ms`, the instant [`plan_cap`]
/// answered `0` at; `undefined` when it would start.
#[wasm_bindgen(js_name = skipReasonText)]
pub fn skip_reason_text(
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_after_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<Option<String>, JsValue> {
    Ok(plan::skip_reason(min_ms, preferred_ms, held_after_ms, at, now_ms).map_err(to_js)?.map(|r| r.to_string()))
}

/// The text of an optional step skipped because its circuit breaker refused
/// it ([`SkipReason::CircuitOpen`]).
#[wasm_bindgen(js_name = circuitSkipText)]
pub fn circuit_skip_text(retry_in_ms: f64) -> String {
    SkipReason::CircuitOpen { retry_in_ms }.to_string()
}

/// [`plan::refusal`]: why a step (its [`plan_new`] numbers) does not start at
/// `now_ms`; `undefined` when it would. The kind crosses by name; the step
/// itself does not cross as an object, which would cost a serde read of six
/// fields and the name on every refusal.
#[wasm_bindgen(js_name = planRefusal, unchecked_return_type = "Refusal | undefined")]
pub fn plan_refusal(
    #[wasm_bindgen(unchecked_param_type = "StepKind")] kind: &str,
    min_ms: f64,
    preferred_ms: Option<f64>,
    held_after_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<JsValue, JsValue> {
    let kind = StepKind::parse(kind).map_err(to_js)?;
    let step = StepInfo { name: String::new(), kind, min_ms, preferred_ms, reserve_ms: min_ms, held_after_ms };
    match plan::refusal(&step, at, now_ms).map_err(to_js)? {
        Some(refusal) => into_js(&refusal),
        None => Ok(JsValue::UNDEFINED),
    }
}

/// [`plan::stream_verdict`]: how a streamed step (`p.stream`) that ended with
/// `end` (a [`StreamEnd`](plan::StreamEnd) by name) is recorded (its
/// outcome's name) and, with `next`, what `js/plan.js` sends next
/// (`"close"`, `"fallback"` or `"error"`). Static strings handed over as
/// they are: the verdict as an object through serde made the main `.wasm`
/// larger. An unknown name is a failure (`js/plan.js` passes only the
/// names it knows).
#[wasm_bindgen(js_name = planStreamVerdict)]
pub fn plan_stream_verdict(end: &str, content_sent: bool, cap_is_deadline: bool, next: bool) -> JsValue {
    let end = plan::StreamEnd::parse(end).unwrap_or(plan::StreamEnd::Failed);
    let verdict = plan::stream_verdict(end, content_sent, cap_is_deadline);
    JsValue::from_str(if next {
        match verdict.next {
            plan::StreamNext::Close => "close",
            plan::StreamNext::Fallback => "fallback",
            plan::StreamNext::Error => "error",
        }
    } else {
        verdict.outcome.as_str()
    })
}

/// [`plan::fallback_answer`]: what `relay` (`step` false) or `p.stream`
/// (`step` true) tells the public client about `cause` (a
/// [`FallbackCause`](plan::FallbackCause) by name; with `retry_reason`, the
/// cause of a `RetryFailed` with that reason): `[status, code, reason]`.
#[wasm_bindgen(js_name = fallbackAnswer)]
pub fn fallback_answer(
    cause: &str,
    retry_reason: Option<String>,
    step: bool,
    phase: Option<String>,
    unsent: bool,
    own_message: Option<String>,
) -> js_sys::Array {
    let cause = match retry_reason {
        Some(r) => plan::FallbackCause::of_retry(&r),
        None => plan::FallbackCause::parse(cause),
    };
    let scope = if step { plan::FallbackScope::Step } else { plan::FallbackScope::Relay };
    let a = plan::fallback_answer(cause, scope, phase.as_deref(), unsent, own_message.as_deref());
    js_sys::Array::of3(&f64::from(a.status).into(), &a.code.into(), &a.reason.into())
}

/// [`redact`](crate::core::redact::redact): `text` with the credentials of
/// its URLs replaced.
#[wasm_bindgen(js_name = redactText)]
pub fn redact_text(text: &str) -> String {
    crate::core::redact::redact(text).into_owned()
}
