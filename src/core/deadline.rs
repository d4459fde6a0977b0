//! Deadline arithmetic: one absolute instant, set once at the edge, asked by every step.
//!
//! # Why an instant and not a duration
//! A duration handed down a call chain ("you have 12 s") silently loses the
//! time spent in hand-offs, queues and the caller's own work. An instant on a
//! monotonic timeline does not drift, because nobody recomputes it: each step
//! asks how much is left *now* and takes `min(preferred, remaining)`.
//!
//! # Units and domain
//! Instants and durations are `f64` milliseconds on one monotonic timeline
//! (`performance.now()` in JavaScript). The accepted domain is
//! `0 ..= MAX_MS` (2^53 − 1, the largest integer every runtime represents
//! exactly). NaN, ±∞ and negatives are rejected with an error naming the
//! parameter; `-0` is accepted and normalised to `0`.
//!
//! # Invariants (each is a property test in this module)
//! 1. No function returns NaN, an infinity or a negative number.
//! 2. [`min`] is commutative and never later than either argument.
//! 3. [`reserve`] never moves a deadline later.
//! 4. [`budget`] never exceeds the remaining time nor the preferred duration,
//!    and refuses (rather than returning 0) when nothing is left.
//!
//! # What is not here
//! Arming the host timer (round up, clamp to [`MAX_TIMER_MS`], re-arm long
//! deadlines in slices) and the wake-up queue are [`crate::core::timers`].

use crate::core::error::{Described, Kind, Message};

/// The largest instant or duration accepted: 2^53 − 1 ms (about 285 616 years).
pub const MAX_MS: f64 = 9_007_199_254_740_991.0;

/// The longest delay a host timer accepts (2^31 − 1 ms, about 24.8 days).
/// `setTimeout` in browsers, Node, Deno and workerd fires *at once* past this,
/// so anything longer must be re-armed in slices.
pub const MAX_TIMER_MS: f64 = 2_147_483_647.0;

/// Milliseconds measured by a clock, for messages (the `{name:ms}` hole).
pub use crate::core::error::Ms;

/// Why a deadline operation was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DeadlineError {
    /// `param` was NaN or ±∞. Pass a finite number of milliseconds.
    NotFinite {
        /// The argument's JS name (`now`, `timeoutMs`, …).
        param: &'static str,
        /// The value given.
        value: f64,
    },
    /// `param` was below zero. Durations and instants start at 0.
    Negative {
        /// The argument's JS name.
        param: &'static str,
        /// The value given (below 0).
        value: f64,
    },
    /// `param` (or the instant it leads to) is past [`MAX_MS`]. Use a shorter
    /// duration; nothing real waits 285 000 years.
    TooLarge {
        /// The argument's JS name.
        param: &'static str,
        /// The value given, in ms.
        value: f64,
    },
    /// `param` is a valid duration, but added to now it runs past [`MAX_MS`]:
    /// at most `max` (`MAX_MS − now`) is accepted. Same code as `TooLarge`.
    TooFar {
        /// The argument's JS name.
        param: &'static str,
        /// The duration given, in ms.
        value: f64,
        /// The longest duration accepted from now, in ms (`MAX_MS − now`).
        max: f64,
    },
    /// The deadline passed `late_by_ms` ago: there is no budget to hand out.
    Exhausted {
        /// The deadline, in ms on the monotonic timeline.
        at: f64,
        /// How long ago the deadline passed, in ms (0 when it is exactly now).
        late_by_ms: f64,
    },
    /// Less than the step's declared minimum is left; the step must not start.
    Insufficient {
        /// What is left before the deadline, in ms.
        remaining_ms: f64,
        /// The least the step declared it needs, in ms.
        min_ms: f64,
    },
}

impl DeadlineError {
    /// The parameter at fault, for errors caused by bad input.
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Self::NotFinite { param, .. }
            | Self::Negative { param, .. }
            | Self::TooLarge { param, .. }
            | Self::TooFar { param, .. } => Some(param),
            Self::Exhausted { .. } | Self::Insufficient { .. } => None,
        }
    }
}

/// The deadline's message templates.
pub mod msg {
    crate::templates! { "deadline";
        /// [`DeadlineError::NotFinite`](super::DeadlineError::NotFinite): NaN or ±∞ where milliseconds are expected.
        NOT_FINITE = "'{param}' must be a finite number of milliseconds between 0 and {max}: current value is {value}";
        /// [`DeadlineError::Negative`](super::DeadlineError::Negative): a duration or instant below 0.
        NEGATIVE = "'{param}' must be between 0 and {max} milliseconds: current value is {value}";
        /// [`DeadlineError::TooLarge`](super::DeadlineError::TooLarge): a duration or instant past [`MAX_MS`](super::MAX_MS).
        TOO_LARGE = "'{param}' must be between 0 and {max} milliseconds (2^53 - 1): current value is {value}";
        /// A duration in range whose instant (now + it) is not: the bound that applies is from now.
        TOO_FAR = "'{param}' must be at most {left} milliseconds from now (the timeline ends at {max} ms, 2^53 - 1): current value is {value}";
        /// Also the message `js/errors.js` gives a `DeadlineExceeded` it makes
        /// on a hot path without a Wasm call.
        EXCEEDED_BY = "deadline exceeded: it passed {lateByMs:ms} ms ago";
        /// [`DeadlineError::Exhausted`](super::DeadlineError::Exhausted) when the deadline is exactly now (nothing left, not late).
        EXCEEDED = "deadline exceeded: no time is left";
        /// Also `js/errors.js`'s `InsufficientBudget` message.
        INSUFFICIENT = "insufficient budget: {remainingMs:ms} ms left, the step needs at least {minMs:ms} ms, so it was not started";
        /// `js/errors.js`'s `DeadlineExceeded` for a deadline held back by
        /// `reserve(reserveMs)` that had passed before any work asked for its
        /// signal: only `budgetMs` was left, below the reserve.
        BELOW_RESERVE = "deadline exceeded before any work started: the budget ({budgetMs:ms} ms) was below the {reserveMs:ms} ms reserved for the fallback";
    }
}

crate::described_error!(DeadlineError);

impl Described for DeadlineError {
    fn code(&self) -> &'static str {
        match self {
            Self::NotFinite { .. } => "NOT_FINITE",
            Self::Negative { .. } => "NEGATIVE",
            Self::TooLarge { .. } | Self::TooFar { .. } => "TOO_LARGE",
            Self::Exhausted { .. } => "DEADLINE_EXCEEDED",
            Self::Insufficient { .. } => "INSUFFICIENT_BUDGET",
        }
    }

    fn param(&self) -> Option<String> {
        // The inherent method (a `&'static str`, for callers in Rust).
        DeadlineError::param(self).map(String::from)
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Exhausted { .. } => Kind::Deadline,
            Self::Insufficient { .. } => Kind::Insufficient,
            Self::NotFinite { .. } | Self::Negative { .. } | Self::TooLarge { .. } | Self::TooFar { .. } => Kind::Range,
        }
    }

    fn fields(&self) -> Vec<(&'static str, f64)> {
        match *self {
            Self::Exhausted { at, late_by_ms } => vec![("at", at), ("lateByMs", late_by_ms)],
            Self::Insufficient { remaining_ms, min_ms } => vec![("remainingMs", remaining_ms), ("minMs", min_ms)],
            Self::NotFinite { .. } | Self::Negative { .. } | Self::TooLarge { .. } | Self::TooFar { .. } => Vec::new(),
        }
    }

    fn message(&self) -> Message {
        let bad = |id, param: &'static str, value: f64| {
            Message::new(id).arg("param", param).arg("max", MAX_MS).arg("value", value)
        };
        match *self {
            Self::NotFinite { param, value } => bad(msg::NOT_FINITE, param, value),
            Self::Negative { param, value } => bad(msg::NEGATIVE, param, value),
            Self::TooLarge { param, value } => bad(msg::TOO_LARGE, param, value),
            Self::TooFar { param, value, max } => bad(msg::TOO_FAR, param, value).arg("left", max),
            Self::Exhausted { late_by_ms, .. } => exceeded(late_by_ms, None),
            Self::Insufficient { remaining_ms, min_ms } => {
                Message::new(msg::INSUFFICIENT).arg("remainingMs", remaining_ms).arg("minMs", min_ms)
            }
        }
    }
}

/// The message of a `DeadlineExceeded` error, which both hosts raise: the
/// deadline passed `late_by_ms` ago, or, with `below_reserve` (`budget_ms`,
/// `reserve_ms`), a reserved deadline had passed before any work started.
pub fn exceeded(late_by_ms: f64, below_reserve: Option<(f64, f64)>) -> Message {
    match below_reserve {
        Some((budget_ms, reserve_ms)) => {
            Message::new(msg::BELOW_RESERVE).arg("budgetMs", budget_ms).arg("reserveMs", reserve_ms)
        }
        None if late_by_ms > 0.0 => Message::new(msg::EXCEEDED_BY).arg("lateByMs", late_by_ms),
        None => Message::new(msg::EXCEEDED),
    }
}

// The checks below run per deadline and per step (src/wasm/deadline.rs):
// `#[inline]` keeps them inside those exports, which the `.wasm`'s lower
// inline threshold (wasm-pack.toml `rustflags`) would otherwise leave as calls.

/// Validates a duration or instant: finite, `0 ..= MAX_MS`; `-0` becomes `0`.
#[inline]
pub fn check_ms(param: &'static str, value: f64) -> Result<f64, DeadlineError> {
    if !value.is_finite() {
        return Err(DeadlineError::NotFinite { param, value });
    }
    if value < 0.0 {
        return Err(DeadlineError::Negative { param, value });
    }
    if value > MAX_MS {
        return Err(DeadlineError::TooLarge { param, value });
    }
    // `-0.0 + 0.0` is `+0.0`; every other accepted value is unchanged.
    Ok(value + 0.0)
}

/// The instant `ms` after `now_ms`.
#[inline]
pub fn deadline_in(now_ms: f64, ms: f64) -> Result<f64, DeadlineError> {
    let now = check_ms("now", now_ms)?;
    let ms = check_ms("ms", ms)?;
    let at = now + ms;
    if at > MAX_MS {
        return Err(DeadlineError::TooFar { param: "ms", value: ms, max: MAX_MS - now });
    }
    Ok(at)
}

/// Time left until `at`, never negative. Inputs are validated instants.
#[inline]
pub fn remaining(at: f64, now_ms: f64) -> Result<f64, DeadlineError> {
    let at = check_ms("at", at)?;
    let now = check_ms("now", now_ms)?;
    Ok(if at > now { at - now } else { 0.0 })
}

/// The earlier of two instants.
pub fn min(a: f64, b: f64) -> Result<f64, DeadlineError> {
    let a = check_ms("a", a)?;
    let b = check_ms("b", b)?;
    Ok(if b < a { b } else { a })
}

/// The instant `ms` before `at`, for work that must run after this step.
/// Reserving more than the whole timeline yields instant 0 (already expired).
#[inline]
pub fn reserve(at: f64, ms: f64) -> Result<f64, DeadlineError> {
    let at = check_ms("at", at)?;
    let ms = check_ms("ms", ms)?;
    Ok(if ms < at { at - ms } else { 0.0 })
}

/// `min(preferred, remaining)`; [`DeadlineError::Exhausted`] when nothing is left.
#[inline]
pub fn budget(at: f64, now_ms: f64, preferred_ms: f64) -> Result<f64, DeadlineError> {
    let preferred = check_ms("preferredMs", preferred_ms)?;
    let left = remaining(at, now_ms)?;
    if left <= 0.0 {
        // Both were validated by `remaining`; `+ 0.0` turns a `-0` into `0`.
        return Err(DeadlineError::Exhausted { at: at + 0.0, late_by_ms: (now_ms - at) + 0.0 });
    }
    Ok(if preferred < left { preferred } else { left })
}

/// Admission check for a step: `Ok(remaining)` when at least `min_ms` is left.
#[inline]
pub fn admit(at: f64, now_ms: f64, min_ms: f64) -> Result<f64, DeadlineError> {
    let min_ms = check_ms("minMs", min_ms)?;
    let left = remaining(at, now_ms)?;
    if left < min_ms || left <= 0.0 {
        return Err(DeadlineError::Insufficient { remaining_ms: left, min_ms });
    }
    Ok(left)
}

/// Seed 002's launch-boundary arithmetic: `max(0, deadline − now − reserve)`.
///
/// `deadline_ms` and `now_ms` are readings of one monotonic clock (any finite
/// value, so clocks with negative origins work); `reserve_ms` is a duration.
pub fn generation_budget(deadline_ms: f64, now_ms: f64, reserve_ms: f64) -> Result<f64, DeadlineError> {
    for (param, value) in [("deadlineMs", deadline_ms), ("nowMs", now_ms)] {
        if !value.is_finite() {
            return Err(DeadlineError::NotFinite { param, value });
        }
        if value.abs() > MAX_MS {
            return Err(DeadlineError::TooLarge { param, value });
        }
    }
    let reserve = check_ms("reserveMs", reserve_ms)?;
    // All three are bounded by 2^53, so the difference is finite.
    let left = deadline_ms - now_ms - reserve;
    Ok(if left > 0.0 { left } else { 0.0 })
}

/// Every awkward `f64` a JavaScript caller can pass, for the core's property
/// tests (NaN, ±∞, −0, 0, the domain's edge and just past it, huge and tiny).
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn any_f64() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(0.0),
        Just(MAX_MS),
        Just(MAX_MS + 2.0),
        -1e20..1e20f64,
        0.0..1e7f64,
        any::<f64>(),
    ]
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok_value(v: f64) -> bool {
        v.is_finite() && v >= 0.0 && v.to_bits() != (-0.0f64).to_bits()
    }

    #[test]
    fn seed_002_worked_example() {
        // 8 s total, 0.5 s auth + 1.5 s retrieval elapsed, 0.5 s response reserve.
        assert_eq!(generation_budget(8_000.0, 2_000.0, 500.0), Ok(5_500.0));
        assert_eq!(generation_budget(8_000.0, 7_500.0, 500.0), Ok(0.0));
        assert_eq!(generation_budget(8_000.0, 9_000.0, 500.0), Ok(0.0));
    }

    #[test]
    fn rejects_each_bad_input_by_name() {
        assert!(matches!(deadline_in(0.0, f64::NAN), Err(DeadlineError::NotFinite { param: "ms", .. })));
        assert!(matches!(deadline_in(0.0, -1.0), Err(DeadlineError::Negative { param: "ms", .. })));
        assert!(matches!(deadline_in(f64::INFINITY, 1.0), Err(DeadlineError::NotFinite { param: "now", .. })));
        assert!(
            matches!(deadline_in(1.0, MAX_MS), Err(DeadlineError::TooFar { param: "ms", max, .. }) if max == MAX_MS - 1.0)
        );
        assert!(matches!(generation_budget(1.0, 0.0, -0.5), Err(DeadlineError::Negative { param: "reserveMs", .. })));
        assert!(matches!(
            generation_budget(f64::NAN, 0.0, 0.0),
            Err(DeadlineError::NotFinite { param: "deadlineMs", .. })
        ));
        assert!(matches!(generation_budget(1e300, 0.0, 0.0), Err(DeadlineError::TooLarge { param: "deadlineMs", .. })));
        let msg = deadline_in(0.0, -3.0).unwrap_err().to_string();
        assert!(msg.contains("'ms'") && msg.contains("-3"), "{msg}");
    }

    #[test]
    fn clock_readings_in_messages_are_rounded_to_a_tenth() {
        assert_eq!(Ms(43.085_806).to_string(), "43.1");
        assert_eq!(Ms(5_000.0).to_string(), "5000");
        // Exact ties (quarters) round away from zero, as js/errors.js `ms` (`toFixed`) does.
        assert_eq!(Ms(0.25).to_string(), "0.3");
        assert_eq!(Ms(1.75).to_string(), "1.8");
        assert_eq!(Ms(12.35).to_string(), "12.3"); // 12.3499…: not a tie
        assert_eq!(Ms(-0.25).to_string(), "-0.3");
        assert_eq!(Ms(1e15 + 0.25).to_string(), "1000000000000000.3");
        let msg = admit(100.0, 56.914194, 50.0).unwrap_err().to_string();
        assert_eq!(msg, "insufficient budget: 43.1 ms left, the step needs at least 50 ms, so it was not started");
        assert_eq!(budget(10.0, 12.5, 1.0).unwrap_err().to_string(), "deadline exceeded: it passed 2.5 ms ago");
        assert_eq!(budget(10.0, 10.0, 1.0).unwrap_err().to_string(), "deadline exceeded: no time is left");
    }

    #[test]
    fn negative_zero_is_zero() {
        assert_eq!(check_ms("ms", -0.0).map(f64::to_bits), Ok(0.0f64.to_bits()));
        assert_eq!(deadline_in(-0.0, -0.0).map(f64::to_bits), Ok(0.0f64.to_bits()));
    }

    #[test]
    fn budget_and_admit_at_the_boundary() {
        assert_eq!(budget(100.0, 40.0, 1_000.0), Ok(60.0));
        assert_eq!(budget(100.0, 40.0, 10.0), Ok(10.0));
        assert_eq!(budget(100.0, 100.0, 10.0), Err(DeadlineError::Exhausted { at: 100.0, late_by_ms: 0.0 }));
        assert_eq!(budget(100.0, 130.0, 10.0), Err(DeadlineError::Exhausted { at: 100.0, late_by_ms: 30.0 }));
        assert_eq!(admit(100.0, 50.0, 50.0), Ok(50.0));
        assert_eq!(admit(100.0, 50.1, 50.0), Err(DeadlineError::Insufficient { remaining_ms: 49.9, min_ms: 50.0 }));
        // A zero minimum still needs *some* time: an expired deadline admits nothing.
        assert!(admit(100.0, 100.0, 0.0).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn min_commutes_and_is_never_later(a in any_f64(), b in any_f64()) {
            match (min(a, b), min(b, a)) {
                (Ok(m), Ok(n)) => {
                    prop_assert_eq!(m.to_bits(), n.to_bits());
                    prop_assert!(ok_value(m) && m <= a && m <= b);
                }
                (Err(_), Err(_)) => {}
                (x, y) => prop_assert!(false, "min({a}, {b}) = {x:?} but min({b}, {a}) = {y:?}"),
            }
        }

        #[test]
        fn reserve_never_moves_later(at in any_f64(), ms in any_f64()) {
            if let Ok(r) = reserve(at, ms) {
                prop_assert!(ok_value(r) && r <= at);
            }
        }

        #[test]
        fn budget_within_remaining_and_preferred(at in any_f64(), now in any_f64(), pref in any_f64()) {
            match budget(at, now, pref) {
                Ok(b) => {
                    let left = remaining(at, now).unwrap();
                    prop_assert!(ok_value(b));
                    prop_assert!(b > 0.0 || pref == 0.0);
                    prop_assert!(b <= left && b <= pref);
                }
                Err(DeadlineError::Exhausted { late_by_ms, .. }) => prop_assert!(late_by_ms >= 0.0),
                Err(e) => prop_assert!(e.param().is_some()),
            }
        }

        #[test]
        fn nothing_returns_nan_or_negative(x in any_f64(), y in any_f64(), z in any_f64()) {
            for r in [deadline_in(x, y), remaining(x, y), min(x, y), reserve(x, y), generation_budget(x, y, z)]
                .into_iter()
                .flatten()
            {
                prop_assert!(ok_value(r), "{r}");
            }
        }

        #[test]
        fn deadline_in_round_trips(now in 0.0..1e12f64, ms in 0.0..1e12f64) {
            let at = deadline_in(now, ms).unwrap();
            prop_assert!(at >= now && (remaining(at, now).unwrap() - ms).abs() <= 1e-3);
        }
    }
}
