//! Bindings for the pipeline concept: [`crate::core::plan`],
//! [`crate::core::retry`], [`crate::core::headers`] and [`crate::core::caps`].
//! Names are the JS API's (`js/plan.js`, `js/retry.js`, `js/propagation.js`).
//!
//! # What holds Wasm memory, and who frees it
//! - A **plan** holds none. [`plan_new`] validates the steps with
//!   [`Plan::with_margin`] and hands back the validated numbers (kind, minimum,
//!   preferred, held reserve per step); the `Plan` is dropped before the call
//!   returns. Each `p.run` then calls [`plan_decide`] with scalars only: one
//!   call, no allocation, no object to free, whatever happens to the plan
//!   object in JS (measured in `bench/pipeline.bench.mjs`).
//! - A **retry loop** holds a [`RetryRunJs`] for exactly the life of one
//!   `retry()` call; `js/retry.js` frees it in a `finally`.
//! - A **retry budget** ([`RetryBudgetJs`]) lives as long as the user's
//!   `RetryBudget` and is freed by its `dispose()`.
//!
//! # Answers as numbers
//! Hot answers are one `f64` (a cap, a timeout or a delay, with negative
//! codes for "no"), so reading one costs no allocation. Rare answers (why a
//! step was refused, why a retry stopped) are separate calls.

use wasm_bindgen::prelude::*;

use super::{legacy_to_js, JsFailure};
use crate::core::caps::{self, Bound, CapKind, CapOverrides, CapsError, PlatformCaps, BUILTIN};
use crate::core::headers::{self, HeaderError, HeaderFormat};
use crate::core::plan::{self, Decision, Plan, PlanError, StepKind, StepSpec};
use crate::core::retry::{
    self, AfterFailure, AttemptOutcome, Backoff, Failure, RetryBudget, RetryError, RetryPolicy, RetryRun, Start,
    StopReason,
};

/// Every plan error is bad input naming the step or parameter.
impl From<PlanError> for JsFailure {
    fn from(error: PlanError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<RetryError> for JsFailure {
    fn from(error: RetryError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<HeaderError> for JsFailure {
    fn from(error: HeaderError) -> Self {
        Self::Range(error.to_string())
    }
}

impl From<CapsError> for JsFailure {
    fn from(error: CapsError) -> Self {
        Self::Range(error.to_string())
    }
}

// ---- plans ----------------------------------------------------------------

/// `plan_decide` answers for a step that must not start; `js/plan.js` mirrors them.
const SKIP: f64 = -1.0;
const INSUFFICIENT: f64 = -2.0;

/// Step kinds as numbers: 0 mandatory, 1 optional, 2 fallback.
fn kind_code(kind: StepKind) -> f64 {
    match kind {
        StepKind::Mandatory => 0.0,
        StepKind::Optional => 1.0,
        StepKind::Fallback => 2.0,
    }
}

fn kind_from(code: f64) -> StepKind {
    // Codes only ever come from `kind_code` through `plan_new`.
    if code == 0.0 {
        StepKind::Mandatory
    } else if code == 1.0 {
        StepKind::Optional
    } else {
        StepKind::Fallback
    }
}

fn option(value: f64) -> Option<f64> {
    (!value.is_nan()).then_some(value)
}

/// Validates a plan ([`Plan::with_margin`], `marginMs` defaulting to
/// [`plan::DEFAULT_MARGIN_MS`]) and returns its numbers, four per step: `[kind, minMs, preferredMs | NaN, heldAfterMs]`. `given` has one byte
/// per step: bit 0 set when `preferredMs` was given, bit 1 when `reserveMs`
/// was (a NaN that *was* given is then refused by name, not taken as absent).
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = planNew)]
pub fn plan_new(
    at: f64,
    now_ms: f64,
    names: Vec<String>,
    kinds: Vec<String>,
    mins: &[f64],
    preferreds: &[f64],
    reserves: &[f64],
    given: &[u8],
    margin_ms: Option<f64>,
) -> Result<Vec<f64>, JsValue> {
    let mut specs = Vec::with_capacity(names.len());
    for (i, (name, kind)) in names.into_iter().zip(kinds.iter()).enumerate() {
        let kind = StepKind::parse(kind).map_err(legacy_to_js)?;
        let mut spec = StepSpec::new(name, kind, mins[i]);
        spec.preferred_ms = (given[i] & 1 != 0).then_some(preferreds[i]);
        spec.reserve_ms = (given[i] & 2 != 0).then_some(reserves[i]);
        specs.push(spec);
    }
    let margin_ms = margin_ms.unwrap_or(plan::DEFAULT_MARGIN_MS);
    let p = Plan::with_margin(at, now_ms, specs, margin_ms).map_err(legacy_to_js)?;
    let mut out = Vec::with_capacity(p.steps().len() * 4);
    for (i, step) in p.steps().iter().enumerate() {
        let held = p.held_after(i).map_err(legacy_to_js)?;
        out.extend([kind_code(step.kind()), step.min_ms(), step.preferred_ms().unwrap_or(f64::NAN), held]);
    }
    Ok(out)
}

/// [`plan::decide_step`] on one step's numbers from [`plan_new`]; the three
/// exports below differ only in what they read from the decision.
fn decide(kind: f64, min_ms: f64, preferred_ms: f64, held_ms: f64, at: f64, now_ms: f64) -> Result<Decision, JsValue> {
    plan::decide_step(kind_from(kind), min_ms, option(preferred_ms), held_ms, at, now_ms).map_err(legacy_to_js)
}

/// [`plan::decide_step`] for numbers from [`plan_new`]: the cap (> 0) when the
/// step may start, `-1` when an optional step is skipped, `-2` when a
/// mandatory or fallback step is insufficient.
#[wasm_bindgen(js_name = planDecide)]
pub fn plan_decide(
    kind: f64,
    min_ms: f64,
    preferred_ms: f64,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<f64, JsValue> {
    let decision = decide(kind, min_ms, preferred_ms, held_ms, at, now_ms)?;
    Ok(match decision {
        Decision::Run { cap_ms, .. } => cap_ms,
        Decision::Skip { .. } => SKIP,
        Decision::Insufficient { .. } => INSUFFICIENT,
    })
}

/// How much time a refused step could have had (the rare path after
/// [`plan_decide`] said no): the `availableMs` after the reserves held for
/// later steps, for the `InsufficientBudget` error.
#[wasm_bindgen(js_name = planAvailable)]
pub fn plan_available(
    kind: f64,
    min_ms: f64,
    preferred_ms: f64,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<f64, JsValue> {
    let decision = decide(kind, min_ms, preferred_ms, held_ms, at, now_ms)?;
    Ok(match decision {
        Decision::Run { cap_ms, .. } => cap_ms,
        Decision::Skip { reason: plan::SkipReason::BelowMinimum { available_ms, .. }, .. } => available_ms,
        Decision::Skip { .. } => 0.0,
        Decision::Insufficient { available_ms, .. } => available_ms,
    })
}

/// Why an optional step was skipped, in words ([`plan::SkipReason`]); `""`
/// when it would not be skipped.
#[wasm_bindgen(js_name = planSkipReason)]
pub fn plan_skip_reason(
    kind: f64,
    min_ms: f64,
    preferred_ms: f64,
    held_ms: f64,
    at: f64,
    now_ms: f64,
) -> Result<String, JsValue> {
    let decision = decide(kind, min_ms, preferred_ms, held_ms, at, now_ms)?;
    Ok(match decision {
        Decision::Skip { reason, .. } => reason.to_string(),
        _ => String::new(),
    })
}

// ---- retries ----------------------------------------------------------------

/// `start` / `failed` answer when the loop stops; a stop's reason is then
/// `stopCode()` / `stopMessage()`.
const STOP: f64 = -1.0;

/// One `retry()` call's [`RetryRun`]. `js/retry.js` frees it when the call settles.
#[wasm_bindgen(js_name = RetryRun)]
pub struct RetryRunJs {
    run: RetryRun,
    stop: Option<StopReason>,
}

#[wasm_bindgen(js_class = RetryRun)]
impl RetryRunJs {
    /// A validated policy ([`RetryPolicy::new`], [`Backoff::new`]) for the
    /// deadline `at`; `maxAttempts` defaults to [`retry::DEFAULT_MAX_ATTEMPTS`].
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(constructor)]
    pub fn new(
        at: f64,
        attempt_min_ms: f64,
        attempt_timeout_ms: Option<f64>,
        base_ms: f64,
        max_ms: f64,
        jitter: f64,
        max_attempts: Option<u32>,
        idempotent: bool,
        operation_key_safe: bool,
        seed: u64,
    ) -> Result<RetryRunJs, JsValue> {
        let max_attempts = max_attempts.unwrap_or(retry::DEFAULT_MAX_ATTEMPTS);
        let backoff = Backoff::new(base_ms, max_ms, jitter).map_err(legacy_to_js)?;
        let policy = RetryPolicy::new(attempt_min_ms, attempt_timeout_ms, backoff, max_attempts, idempotent)
            .map_err(legacy_to_js)?;
        let run = RetryRun::new(policy, at, seed, operation_key_safe).map_err(legacy_to_js)?;
        Ok(Self { run, stop: None })
    }

    /// [`RetryRun::start`]: the attempt's timeout (> 0), or `-1` to stop.
    pub fn start(&mut self, now_ms: f64) -> Result<f64, JsValue> {
        let start = self.run.start(now_ms, None).map_err(legacy_to_js)?;
        Ok(self.started(start))
    }

    /// [`RetryRun::start`] counting the first attempt as a request in `budget`.
    #[wasm_bindgen(js_name = startBudgeted)]
    pub fn start_budgeted(&mut self, now_ms: f64, budget: &mut RetryBudgetJs) -> Result<f64, JsValue> {
        let start = self.run.start(now_ms, Some(&mut budget.budget)).map_err(legacy_to_js)?;
        Ok(self.started(start))
    }

    fn started(&mut self, start: Start) -> f64 {
        match start {
            Start::Attempt { timeout_ms, .. } => timeout_ms,
            Start::Stop(reason) => {
                self.stop = Some(reason);
                STOP
            }
        }
    }

    /// [`RetryRun::succeeded`].
    pub fn succeeded(&mut self, now_ms: f64) -> Result<(), JsValue> {
        self.run.succeeded(now_ms).map_err(legacy_to_js)
    }

    /// [`RetryRun::failed`] with `failure` = `ambiguous | not-applied | permanent`:
    /// the backoff delay (≥ 0), or `-1` to stop.
    pub fn failed(&mut self, now_ms: f64, failure: &str) -> Result<f64, JsValue> {
        let failure = Failure::parse(failure).map_err(legacy_to_js)?;
        let after = self.run.failed(now_ms, failure, None).map_err(legacy_to_js)?;
        Ok(self.after(after))
    }

    /// [`RetryRun::failed`], withdrawing the retry from `budget`.
    #[wasm_bindgen(js_name = failedBudgeted)]
    pub fn failed_budgeted(&mut self, now_ms: f64, failure: &str, budget: &mut RetryBudgetJs) -> Result<f64, JsValue> {
        let failure = Failure::parse(failure).map_err(legacy_to_js)?;
        let after = self.run.failed(now_ms, failure, Some(&mut budget.budget)).map_err(legacy_to_js)?;
        Ok(self.after(after))
    }

    fn after(&mut self, after: AfterFailure) -> f64 {
        match after {
            AfterFailure::Backoff { delay_ms } => delay_ms,
            AfterFailure::Stop(reason) => {
                self.stop = Some(reason);
                STOP
            }
        }
    }

    /// Why the loop stopped ([`StopReason::code`]), `undefined` while it runs.
    #[wasm_bindgen(js_name = stopCode)]
    pub fn stop_code(&self) -> Option<String> {
        self.stop.map(|r| r.code().to_owned())
    }

    /// Why the loop stopped, in words.
    #[wasm_bindgen(js_name = stopMessage)]
    pub fn stop_message(&self) -> Option<String> {
        self.stop.map(|r| r.to_string())
    }

    /// Every finished attempt, five numbers each:
    /// `number, startedMs, timeoutMs, elapsedMs, outcome` (0 ok, 1 ambiguous,
    /// 2 not-applied, 3 permanent).
    #[wasm_bindgen(js_name = recordsFlat)]
    pub fn records_flat(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.run.records().len() * 5);
        for r in self.run.records() {
            let outcome = match r.outcome {
                AttemptOutcome::Ok => 0.0,
                AttemptOutcome::Failed(Failure::Ambiguous) => 1.0,
                AttemptOutcome::Failed(Failure::NotApplied) => 2.0,
                AttemptOutcome::Failed(Failure::Permanent) => 3.0,
            };
            out.extend([f64::from(r.number), r.started_ms, r.timeout_ms, r.elapsed_ms, outcome]);
        }
        out
    }
}

/// A shared [`RetryBudget`]; `js/retry.js`'s `RetryBudget.dispose()` frees it.
#[wasm_bindgen(js_name = RetryBudgetCore)]
pub struct RetryBudgetJs {
    budget: RetryBudget,
}

#[wasm_bindgen(js_class = RetryBudgetCore)]
impl RetryBudgetJs {
    #[wasm_bindgen(constructor)]
    pub fn new(ratio: f64, min_per_second: f64, window_ms: f64) -> Result<RetryBudgetJs, JsValue> {
        Ok(Self { budget: RetryBudget::new(ratio, min_per_second, window_ms).map_err(legacy_to_js)? })
    }

    #[wasm_bindgen(js_name = recordRequest)]
    pub fn record_request(&mut self, now_ms: f64) -> Result<(), JsValue> {
        self.budget.record_request(now_ms).map_err(legacy_to_js)
    }

    #[wasm_bindgen(js_name = tryRetry)]
    pub fn try_retry(&mut self, now_ms: f64) -> Result<bool, JsValue> {
        self.budget.try_retry(now_ms).map_err(legacy_to_js)
    }

    /// `[requests, retries, floor]` in the window ending at `now_ms`.
    pub fn counts(&mut self, now_ms: f64) -> Result<Vec<f64>, JsValue> {
        let (requests, retries) = self.budget.counts(now_ms).map_err(legacy_to_js)?;
        // Counts stay far below 2^53 in any real window.
        Ok(vec![requests as f64, retries as f64, self.budget.floor()])
    }
}

/// The first `retries` delays of a backoff for `seed` ([`Backoff::schedule`]).
#[wasm_bindgen(js_name = backoffSchedule)]
pub fn backoff_schedule(base_ms: f64, max_ms: f64, jitter: f64, retries: u32, seed: u64) -> Result<Vec<f64>, JsValue> {
    let backoff = Backoff::new(base_ms, max_ms, jitter).map_err(legacy_to_js)?;
    backoff.schedule(retries, seed).map_err(legacy_to_js)
}

/// [`retry::check_hedge`].
#[wasm_bindgen(js_name = checkHedge)]
pub fn check_hedge(delay_ms: f64, max_attempts: u32) -> Result<f64, JsValue> {
    retry::check_hedge(delay_ms, max_attempts).map_err(legacy_to_js)
}

// ---- propagation headers ------------------------------------------------------
//
// A header format crosses as its index in [`HeaderFormat::ALL`] (the order of
// `deadlineHeaders` in `js/propagation.js`): passing the name as a string
// would copy a second string into Wasm memory on every call. A name JS does
// not know goes through [`header_format`] for the core's error.

fn format(code: u8) -> Result<HeaderFormat, JsValue> {
    HeaderFormat::ALL
        .get(usize::from(code))
        .copied()
        .ok_or_else(|| legacy_to_js(HeaderError::UnknownFormat { value: format!("#{code}") }))
}

/// The index of a header name in [`HeaderFormat::ALL`] (ASCII case-insensitive);
/// a `RangeError` listing the known names otherwise.
#[wasm_bindgen(js_name = headerFormat)]
pub fn header_format(name: &str) -> Result<u8, JsValue> {
    let f = HeaderFormat::from_name(name).map_err(legacy_to_js)?;
    // ALL has four entries.
    Ok(HeaderFormat::ALL.iter().position(|&g| g == f).unwrap_or(0) as u8)
}

/// [`headers::encode`]: the header value for `remaining_ms`.
#[wasm_bindgen(js_name = encodeHeader)]
pub fn encode_header(format_code: u8, remaining_ms: f64) -> Result<String, JsValue> {
    headers::encode(format(format_code)?, remaining_ms).map_err(legacy_to_js)
}

/// [`headers::parse_str`]: the remaining duration a header value states, in ms.
#[wasm_bindgen(js_name = parseHeader)]
pub fn parse_header(format_code: u8, value: &str) -> Result<f64, JsValue> {
    headers::parse_str(format(format_code)?, value).map_err(legacy_to_js)
}

/// [`headers::earliest_incoming`] over the headers present (`formats[i]`,
/// `values[i]`): `[at, sourceIndex | -1, rejectedIndex…]`. A rejected header's
/// error is [`parse_header`]'s, for the caller that wants it.
#[wasm_bindgen(js_name = earliestIncoming)]
pub fn earliest_incoming(
    now_ms: f64,
    formats: &[u8],
    values: Vec<String>,
    transit_ms: f64,
    max_ms: f64,
) -> Result<Vec<f64>, JsValue> {
    let mut present = Vec::with_capacity(values.len());
    for (&code, value) in formats.iter().zip(values.iter()) {
        present.push((format(code)?, value.as_bytes()));
    }
    let incoming = headers::earliest_incoming(now_ms, &present, transit_ms, max_ms).map_err(legacy_to_js)?;
    // Indices stay far below 2^53.
    let mut out = vec![incoming.at, incoming.source.map_or(-1.0, |i| i as f64)];
    out.extend(incoming.rejected.iter().map(|&(i, _)| i as f64));
    Ok(out)
}

// ---- platform caps ----------------------------------------------------------------

fn bound_code(bound: Bound) -> f64 {
    match bound {
        Bound::Product => 0.0,
        Bound::Wall => 1.0,
        Bound::FirstByte => 2.0,
    }
}

fn deadline_numbers(now_ms: f64, caps: &PlatformCaps, product_ms: f64, reserve_ms: f64) -> Result<Vec<f64>, JsValue> {
    let d = caps::for_platform(now_ms, caps, product_ms, reserve_ms).map_err(legacy_to_js)?;
    Ok(vec![d.at, bound_code(d.bound), d.cpu_ms.unwrap_or(f64::NAN)])
}

/// [`caps::for_platform`] with the built-in caps of `platform`, `plan` and
/// `trigger`, corrected by the overrides given: `[at, bound, cpuMs | NaN]`
/// (bound: 0 product, 1 wall-clock, 2 first byte).
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = forPlatform)]
pub fn for_platform(
    now_ms: f64,
    platform: &str,
    plan: Option<String>,
    trigger: &str,
    product_ms: f64,
    fallback_reserve_ms: f64,
    wall_ms: Option<f64>,
    first_byte_ms: Option<f64>,
    cpu_ms: Option<f64>,
) -> Result<Vec<f64>, JsValue> {
    let caps = PlatformCaps::parse(platform, plan.as_deref(), trigger)
        .and_then(|c| c.with_overrides(CapOverrides { wall_ms, first_byte_ms, cpu_ms }))
        .map_err(legacy_to_js)?;
    deadline_numbers(now_ms, &caps, product_ms, fallback_reserve_ms)
}

/// [`caps::for_platform`] with caps the user supplies ([`PlatformCaps::custom`]).
#[wasm_bindgen(js_name = forCustomPlatform)]
pub fn for_custom_platform(
    now_ms: f64,
    product_ms: f64,
    fallback_reserve_ms: f64,
    wall_ms: Option<f64>,
    first_byte_ms: Option<f64>,
    cpu_ms: Option<f64>,
) -> Result<Vec<f64>, JsValue> {
    let caps = PlatformCaps::custom(wall_ms, first_byte_ms, cpu_ms).map_err(legacy_to_js)?;
    deadline_numbers(now_ms, &caps, product_ms, fallback_reserve_ms)
}

/// The sources of the built-in figures [`for_platform`] uses for this invocation.
#[wasm_bindgen(js_name = platformSources)]
pub fn platform_sources(platform: &str, plan: Option<String>, trigger: &str) -> Result<Vec<String>, JsValue> {
    let caps = PlatformCaps::parse(platform, plan.as_deref(), trigger).map_err(legacy_to_js)?;
    Ok(caps.sources.iter().map(|s| (*s).to_owned()).collect())
}

/// [`BUILTIN`] as text, seven strings per cap: platform, plan (`""`: every
/// plan), trigger (`""`: every trigger), kind, note, source, retrieved.
#[wasm_bindgen(js_name = builtinCapsText)]
pub fn builtin_caps_text() -> Vec<String> {
    let mut out = Vec::with_capacity(BUILTIN.len() * 7);
    for c in &BUILTIN {
        let tier = match c.tier {
            Some(caps::Tier::Free) => "free",
            Some(caps::Tier::Paid) => "paid",
            None => "",
        };
        let kind = match c.kind {
            CapKind::Wall => "wall",
            CapKind::FirstByte => "first-byte",
            CapKind::Cpu => "cpu",
        };
        out.extend(
            [c.platform.as_str(), tier, c.trigger.map_or("", |t| t.as_str()), kind, c.note, c.source, c.retrieved]
                .map(str::to_owned),
        );
    }
    out
}

/// [`BUILTIN`]'s numbers, two per cap: `ms | NaN`, `configurableMaxMs | NaN`.
#[wasm_bindgen(js_name = builtinCapsMs)]
pub fn builtin_caps_ms() -> Vec<f64> {
    BUILTIN.iter().flat_map(|c| [c.ms.unwrap_or(f64::NAN), c.configurable_max_ms.unwrap_or(f64::NAN)]).collect()
}
