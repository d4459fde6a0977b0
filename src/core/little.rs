//! Little's law: a timeout is also a concurrency limit.
//!
//! # Why this is arithmetic about timeouts
//! Requests in flight = arrival rate × time each one stays. A timeout bounds
//! how long one stays, so `rate × timeout` bounds your own concurrency. When a
//! dependency slows down, callers keep arriving at the same rate and the
//! occupancy climbs to whatever the timeout permits: 50 req/s with a 30 s
//! timeout is 1 500 sockets, buffers and handlers. A timeout has to fit the
//! resources (sockets, memory, a connection pool) as well as the latency
//! distribution; [`max_timeout_for`] says how long a limit allows. The
//! limiter that bounds it is [`crate::core::limiter`]; this module is the
//! arithmetic.
//!
//! # Units and domain
//! Rates are requests per **second** (how people quote them), timeouts are
//! milliseconds like everywhere else, limits are counts. Every input must be
//! finite and non-negative; rates and limits are capped at [`MAX_RATE`] and
//! [`MAX_LIMIT`] so that no product overflows into ∞.
//!
//! # Invariants (tested below)
//! 1. Results are finite and non-negative; bad input is an error naming the
//!    parameter.
//! 2. `concurrency_bound(rate, max_timeout_for(rate, limit)) <= limit`
//!    (up to rounding), and the bound grows with rate and with timeout.

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS};
use crate::core::error::{whole_code, Described, Message};

/// The largest accepted arrival rate: 10^9 requests per second.
pub const MAX_RATE: f64 = 1e9;
/// The largest accepted resource limit: 10^12 slots.
pub const MAX_LIMIT: f64 = 1e12;

/// The most slots a concurrency limiter may have (2^32 − 1).
pub const MAX_SLOTS: f64 = 4_294_967_295.0;

/// Why a Little's-law computation was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LittleError {
    /// The arrival rate must be a finite number of requests per second,
    /// `0 ..= MAX_RATE` (greater than 0 where a limit is divided by it).
    Rate {
        /// The rate given, in requests per second.
        value: f64,
        /// Whether 0 is refused too (the rate is a divisor).
        min_exclusive: bool,
    },
    /// The limit must be a finite count between 0 and [`MAX_LIMIT`].
    Limit {
        /// The limit given.
        value: f64,
    },
    /// The timeout is not a valid duration.
    Timeout(DeadlineError),
    /// A concurrency limiter's number of slots must be a whole number
    /// between 1 and [`MAX_SLOTS`].
    Slots {
        /// The number of slots given.
        value: f64,
    },
}

/// Little's law's message templates.
pub mod msg {
    crate::templates! { "little";
        /// [`LittleError::Rate`](super::LittleError::Rate) where 0 is allowed.
        RATE = "'ratePerSec' must be between 0 and {max} requests per second: current value is {value}";
        /// [`LittleError::Rate`](super::LittleError::Rate) where the rate divides and must be above 0.
        RATE_POSITIVE = "'ratePerSec' must be greater than 0 and at most {max} requests per second: current value is {value}";
        /// [`LittleError::Limit`](super::LittleError::Limit).
        LIMIT = "'limit' must be between 0 and {max}: current value is {value}";
        /// [`LittleError::Slots`](super::LittleError::Slots).
        SLOTS = "'limit' must be a whole number between 1 and {max}: current value is {value}";
    }
}

crate::described_error!(LittleError);

impl Described for LittleError {
    fn code(&self) -> &'static str {
        match self {
            Self::Timeout(e) => e.code(),
            Self::Slots { value } => whole_code(*value, 1.0, MAX_SLOTS),
            _ => "OUT_OF_RANGE",
        }
    }

    fn param(&self) -> Option<String> {
        Some(
            match self {
                Self::Rate { .. } => "options.ratePerSec",
                Self::Limit { .. } | Self::Slots { .. } => "options.limit",
                Self::Timeout(_) => "options.timeoutMs",
            }
            .into(),
        )
    }

    fn message(&self) -> Message {
        let bad = |id, max: f64, value: f64| Message::new(id).arg("max", max).arg("value", value);
        match *self {
            Self::Rate { value, min_exclusive: false } => bad(msg::RATE, MAX_RATE, value),
            Self::Rate { value, min_exclusive: true } => bad(msg::RATE_POSITIVE, MAX_RATE, value),
            Self::Limit { value } => bad(msg::LIMIT, MAX_LIMIT, value),
            Self::Timeout(e) => e.message(),
            Self::Slots { value } => bad(msg::SLOTS, MAX_SLOTS, value),
        }
    }
}

/// The arguments of [`concurrency_bound`] as JavaScript passes them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct ConcurrencyBoundOptions {
    /// Arrivals, in requests per second (`ratePerSec` in JS).
    pub rate_per_sec: f64,
    /// How long each request may take, in ms (`timeoutMs` in JS).
    pub timeout_ms: f64,
}

/// The arguments of [`max_timeout_for`] as JavaScript passes them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct MaxTimeoutOptions {
    /// Arrivals, in requests per second (`ratePerSec` in JS).
    pub rate_per_sec: f64,
    /// The most requests in flight at once.
    pub limit: f64,
}

fn check_rate(rate: f64, positive: bool) -> Result<f64, LittleError> {
    let ok = if positive { rate > 0.0 && rate <= MAX_RATE } else { (0.0..=MAX_RATE).contains(&rate) };
    if !ok {
        return Err(LittleError::Rate { value: rate, min_exclusive: positive });
    }
    Ok(rate + 0.0)
}

/// The worst-case number of requests in flight: `rate × timeout`.
///
/// `concurrency_bound(50.0, 30_000.0)` is `1500.0`.
pub fn concurrency_bound(rate_per_sec: f64, timeout_ms: f64) -> Result<f64, LittleError> {
    let rate = check_rate(rate_per_sec, false)?;
    let t = check_ms("timeoutMs", timeout_ms).map_err(LittleError::Timeout)?;
    // At most 1e9 × 9e15 / 1e3 = 9e21: finite.
    Ok(rate * t / 1000.0)
}

/// The longest timeout that keeps `rate × timeout` within `limit`, in ms,
/// capped at [`MAX_MS`].
///
/// `max_timeout_for(50.0, 100.0)` is `2000.0`.
pub fn max_timeout_for(rate_per_sec: f64, limit: f64) -> Result<f64, LittleError> {
    let rate = check_rate(rate_per_sec, true)?;
    if !(0.0..=MAX_LIMIT).contains(&limit) {
        return Err(LittleError::Limit { value: limit });
    }
    let ms = limit / rate * 1000.0;
    Ok(if ms > MAX_MS { MAX_MS } else { ms + 0.0 })
}

/// Validates a concurrency limiter's number of slots: a whole number
/// `1 ..= MAX_SLOTS` (a fixed `limit` of [`crate::core::limiter`]).
pub fn check_slots(limit: f64) -> Result<f64, LittleError> {
    if !(1.0..=MAX_SLOTS).contains(&limit) || limit.fract() != 0.0 {
        return Err(LittleError::Slots { value: limit });
    }
    Ok(limit)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn errors_name_the_option_and_a_stable_code() {
        let e = max_timeout_for(0.0, 10.0).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("OUT_OF_RANGE", Some("options.ratePerSec")));
        let e = concurrency_bound(1.0, -1.0).unwrap_err();
        assert_eq!((e.code(), e.param().as_deref()), ("NEGATIVE", Some("options.timeoutMs")));
        for (limit, code) in [(1.5, "NOT_WHOLE"), (0.0, "OUT_OF_RANGE"), (f64::NAN, "NOT_FINITE")] {
            let e = check_slots(limit).unwrap_err();
            assert_eq!((e.code(), e.param().as_deref()), (code, Some("options.limit")));
        }
        let all = [
            max_timeout_for(0.0, 10.0).unwrap_err(),
            concurrency_bound(-1.0, 10.0).unwrap_err(),
            concurrency_bound(1.0, -1.0).unwrap_err(),
            max_timeout_for(1.0, -1.0).unwrap_err(),
            check_slots(0.5).unwrap_err(),
        ];
        for e in all {
            crate::core::error::assert_filled(&e.message());
        }
    }

    #[test]
    fn seed_000_table() {
        assert_eq!(concurrency_bound(50.0, 2_000.0), Ok(100.0));
        assert_eq!(concurrency_bound(50.0, 30_000.0), Ok(1_500.0));
        assert_eq!(concurrency_bound(50.0, 120_000.0), Ok(6_000.0));
        assert_eq!(max_timeout_for(50.0, 100.0), Ok(2_000.0));
        assert_eq!(max_timeout_for(50.0, 0.0), Ok(0.0));
        assert_eq!(concurrency_bound(0.0, 30_000.0), Ok(0.0));
    }

    #[test]
    fn rejects_bad_input_by_name() {
        for bad in [f64::NAN, -1.0, f64::INFINITY, 2e9] {
            assert!(matches!(concurrency_bound(bad, 1.0), Err(LittleError::Rate { .. })));
            assert!(matches!(max_timeout_for(bad, 1.0), Err(LittleError::Rate { .. })));
            assert!(matches!(max_timeout_for(1.0, bad * 1e3), Err(LittleError::Limit { .. })));
        }
        assert!(matches!(concurrency_bound(1.0, f64::NAN), Err(LittleError::Timeout(_))));
        assert_eq!(
            max_timeout_for(0.0, 10.0).unwrap_err().to_string(),
            "'ratePerSec' must be greater than 0 and at most 1000000000 requests per second: current value is 0"
        );
        assert!(max_timeout_for(1.0, f64::NAN).unwrap_err().to_string().starts_with("'limit' must be between 0"));
        assert_eq!(check_slots(8.0), Ok(8.0));
        assert_eq!(check_slots(MAX_SLOTS), Ok(MAX_SLOTS));
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY, MAX_SLOTS + 1.0] {
            assert!(matches!(check_slots(bad), Err(LittleError::Slots { .. })), "{bad}");
        }
        assert_eq!(
            check_slots(0.5).unwrap_err().to_string(),
            "'limit' must be a whole number between 1 and 4294967295: current value is 0.5"
        );
    }

    proptest! {
        #[test]
        fn bound_and_max_agree(rate in 1e-6..1e9f64, limit in 0.0..1e12f64) {
            let t = max_timeout_for(rate, limit).unwrap();
            prop_assert!(t.is_finite() && t >= 0.0);
            if t < MAX_MS {
                let b = concurrency_bound(rate, t).unwrap();
                prop_assert!(b <= limit * (1.0 + 1e-12) + 1e-9, "{b} > {limit}");
            }
        }

        #[test]
        fn never_nan(rate in any::<f64>(), x in any::<f64>()) {
            if let Ok(v) = concurrency_bound(rate, x) { prop_assert!(v.is_finite() && v >= 0.0); }
            if let Ok(v) = max_timeout_for(rate, x) { prop_assert!(v.is_finite() && v >= 0.0); }
        }
    }
}
