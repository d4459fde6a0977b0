//! Bindings for [`crate::core::breaker`] (`js/breaker.js`: `CircuitBreaker`).
//!
//! The per-call pair is scalar, because it runs on every guarded call (the
//! closed path has a budget: BENCHMARKS.md, "Circuit breaker"): `check(slot, now)`
//! answers an [`Admission`] (a `#[wasm_bindgen]` enum: a number that both
//! sides name), with the instant of a refusal read after it
//! (`refusedUntil`), and `record(…)` answers a [`StateChange`] or
//! `undefined` (an enum again, so no table of codes is mirrored in JS); the
//! outcome `record` takes is a [`CallOutcome`]. The key's name crosses once,
//! when the JavaScript side meets a key it has not cached (`key`, the slot,
//! with `evicted()` after it). Options, stats and the exported state cross
//! through serde or as bytes.

use wasm_bindgen::prelude::*;

use super::{from_js, into_js, to_js, within_js};
use crate::core::breaker::{
    error_outcome, found, open_message, Admit, Breaker, BreakerOptions, Change, OpenReason, Outcome,
};

named_enum! {
    /// An [`Outcome`] as it crosses (`core.CallOutcome` in JavaScript): what a
    /// permit records, what [`breaker_error_outcome`] answers.
    CallOutcome for Outcome { Success = Success, Failure = Failure, Timeout = Timeout, Cancelled = Cancelled }
}

/// [`Admit`] as [`BreakerCore::check`] answers it (`core.Admission` in
/// JavaScript).
#[wasm_bindgen]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// [`Admit::Closed`]: the call goes.
    Closed,
    /// [`Admit::Probe`] (the key was half-open already).
    Probe,
    /// [`Admit::Probe`] from a check that half-opened the key.
    HalfOpened,
    /// [`Admit::Refused`] while open; the instant is `refusedUntil()`.
    Open,
    /// [`Admit::Refused`] while half-open with every probe out; the instant
    /// is `refusedUntil()`.
    HalfOpenFull,
}

named_enum! {
    /// A [`Change`] as [`BreakerCore::record`] answers it (`core.StateChange`
    /// in JavaScript), the reason of an opening in its name.
    StateChange from Change {
        OpenedConsecutiveFailures = Change::Opened(OpenReason::ConsecutiveFailures),
        OpenedFailureRate = Change::Opened(OpenReason::FailureRate),
        OpenedSlowCallRate = Change::Opened(OpenReason::SlowCallRate),
        OpenedProbeFailed = Change::Opened(OpenReason::ProbeFailed),
        OpenedImported = Change::Opened(OpenReason::Imported),
        HalfOpened = Change::HalfOpened,
        Closed = Change::Closed,
    }
}

/// A keyed [`Breaker`], freed by the user's `dispose()`.
#[wasm_bindgen(js_name = BreakerCore)]
pub struct BreakerCore {
    breaker: Breaker,
    /// The instant of the last refusal [`BreakerCore::check`] answered.
    refused_until: f64,
    /// Whether the last [`BreakerCore::key`] replaced a key.
    evicted: bool,
}

#[wasm_bindgen(js_class = BreakerCore)]
impl BreakerCore {
    /// Errors name the option as the user wrote it (`options.failureRate`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "BreakerOptions | undefined")] options: JsValue,
    ) -> Result<BreakerCore, JsValue> {
        let options: BreakerOptions =
            if options.is_undefined() { BreakerOptions::default() } else { from_js(options, "options")? };
        let breaker = Breaker::new(&options).map_err(|e| within_js("options", &e))?;
        Ok(Self { breaker, refused_until: f64::NAN, evicted: false })
    }

    /// `openMs` as validated.
    #[wasm_bindgen(js_name = openMs)]
    pub fn open_ms(&self) -> f64 {
        self.breaker.open_ms()
    }

    /// The slot of `name` (made if new). When it replaced the least recently
    /// used key, [`evicted`](Self::evicted) says so: the caller drops that
    /// key's cache entry.
    pub fn key(&mut self, name: &str, now_ms: f64) -> u32 {
        let slot = self.breaker.key(name, now_ms);
        self.evicted = slot.evicted.is_some();
        slot.index as u32
    }

    /// Whether the last [`key`](Self::key) replaced the key that held its slot.
    pub fn evicted(&self) -> bool {
        self.evicted
    }

    /// Whether a call on the key at `slot` goes at `now_ms`. After a refusal
    /// ([`Admission::Open`] or [`Admission::HalfOpenFull`]),
    /// [`refused_until`](Self::refused_until) is the instant before which
    /// nothing goes.
    pub fn check(&mut self, slot: u32, now_ms: f64) -> Admission {
        match self.breaker.check(slot as usize, now_ms) {
            Admit::Closed => Admission::Closed,
            Admit::Probe { half_opened: false } => Admission::Probe,
            Admit::Probe { half_opened: true } => Admission::HalfOpened,
            Admit::Refused { until } => {
                self.refused_until = until;
                if self.breaker.half_open(slot as usize) {
                    Admission::HalfOpenFull
                } else {
                    Admission::Open
                }
            }
        }
    }

    /// The instant of the last refusal [`check`](Self::check) answered.
    #[wasm_bindgen(js_name = refusedUntil)]
    pub fn refused_until(&self) -> f64 {
        self.refused_until
    }

    /// Records an outcome; answers the change it made, `undefined` for none.
    pub fn record(
        &mut self,
        slot: u32,
        now_ms: f64,
        probe: bool,
        outcome: CallOutcome,
        duration_ms: f64,
        slow_ms: f64,
    ) -> Option<StateChange> {
        self.breaker.record(slot as usize, now_ms, probe, outcome.into(), duration_ms, slow_ms).map(StateChange::from)
    }

    /// The key's counters.
    #[wasm_bindgen(unchecked_return_type = "CircuitStats")]
    pub fn stats(&mut self, slot: u32, now_ms: f64) -> Result<JsValue, JsValue> {
        into_js(&self.breaker.stats(slot as usize, now_ms))
    }

    /// The keys' names, by slot.
    pub fn names(&self) -> Vec<String> {
        self.breaker.names().map(str::to_owned).collect()
    }

    /// The state as bytes ([`Breaker::export`]).
    #[wasm_bindgen(js_name = exportState)]
    pub fn export_state(&self, now_ms: f64, wall_ms: f64) -> Vec<u8> {
        self.breaker.export(now_ms, wall_ms)
    }

    /// Takes in exported bytes; answers the slots that opened.
    #[wasm_bindgen(js_name = importState)]
    pub fn import_state(&mut self, bytes: &[u8], now_ms: f64, wall_ms: f64) -> Result<Vec<u32>, JsValue> {
        let opened = self.breaker.import(bytes, now_ms, wall_ms).map_err(to_js)?;
        Ok(opened.into_iter().map(|s| s as u32).collect())
    }
}

/// The message of a call an open breaker refused (`CircuitOpen`).
#[wasm_bindgen(js_name = circuitOpenText)]
pub fn circuit_open_text(key: &str, in_ms: f64) -> String {
    open_message(key, in_ms).to_string()
}

/// What a host found in a call's error, one flag each (`core.Found` in
/// JavaScript, which ORs them for [`breaker_error_outcome`]): the core's
/// [`found`] flags, pinned to them below when this compiles.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum Found {
    Timeout = 1,
    Shed = 2,
    CircuitOpen = 4,
    CallerLeft = 8,
    NotStarted = 16,
}
const _: () = assert!(
    Found::Timeout as u32 == found::TIMEOUT
        && Found::Shed as u32 == found::SHED
        && Found::CircuitOpen as u32 == found::CIRCUIT_OPEN
        && Found::CallerLeft as u32 == found::CALLER_LEFT
        && Found::NotStarted as u32 == found::NOT_STARTED
);

/// How a call that ended with an error counts, from the [`Found`] flags the
/// host ORed.
#[wasm_bindgen(js_name = breakerErrorOutcome)]
pub fn breaker_error_outcome(found: u32) -> CallOutcome {
    error_outcome(found).into()
}
