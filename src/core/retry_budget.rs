//! Retry budgets: one retry allowance shared by every call to a dependency.
//!
//! # Why a budget and not only a maximum number of attempts
//! `maxAttempts = 3` triples the load on a dependency that is failing
//! because it is overloaded. A [`RetryBudget`] (the scheme of Finagle's
//! `RetryBudget` and Envoy's retry budgets) shares one allowance between all
//! calls: in any window of `windowMs`, retries are allowed only while
//! `retries ≤ ratio × requests + minPerSecond × windowMs / 1000`. The floor
//! keeps a quiet service able to retry at all; the ratio bounds the extra
//! load at `1 + ratio` times the original traffic.
//!
//! # Why a sliding window of buckets
//! The budget is asked on every failed attempt, so it must be `O(1)` and
//! allocation-free: ten fixed buckets of `windowMs / 10` each, cleared as the
//! window slides, bound both the memory and the error of the window (a count
//! leaves up to one bucket late).
//!
//! # Invariants (each is a property test in this module)
//! 1. After every retry a budget allows, `retries ≤ ratio × requests + floor`
//!    holds for its window, and its counts equal an exact oracle's.

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError};
use crate::core::error::{Described, Kind, Message};

/// Buckets in a [`RetryBudget`]'s sliding window.
pub const RETRY_BUDGET_BUCKETS: usize = 10;

/// The longest retry-budget window: one day.
pub const MAX_WINDOW_MS: f64 = 86_400_000.0;

/// The highest accepted retry-budget floor, in retries per second.
pub const MAX_MIN_PER_SECOND: f64 = 1_000_000.0;

/// Why a retry budget's setting or call was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryBudgetError {
    /// `ratio` is outside `[0, 1]`.
    BadRatio {
        /// The ratio given.
        value: f64,
    },
    /// `minPerSecond` is outside `0 ..= MAX_MIN_PER_SECOND`.
    BadMinPerSecond {
        /// The floor given, in retries per second.
        value: f64,
    },
    /// `windowMs` is outside `1 ..= MAX_WINDOW_MS`.
    BadWindow {
        /// The window given, in ms.
        value: f64,
    },
    /// `now` is NaN, infinite, negative or too large.
    Time(DeadlineError),
}

/// The retry budget's message templates.
pub mod msg {
    crate::templates! { "retry_budget";
        /// [`RetryBudgetError::BadRatio`](super::RetryBudgetError::BadRatio): `ratio` outside `[0, 1]`.
        BAD_RATIO = "'ratio' must be between 0 and 1: current value is {value}";
        /// [`RetryBudgetError::BadMinPerSecond`](super::RetryBudgetError::BadMinPerSecond): `minPerSecond` outside `0 ..= {max}`.
        BAD_MIN_PER_SECOND = "'minPerSecond' must be between 0 and {max}: current value is {value}";
        /// [`RetryBudgetError::BadWindow`](super::RetryBudgetError::BadWindow): `windowMs` outside `1 ..= {max}` ms.
        BAD_WINDOW = "'windowMs' must be between 1 and {max} milliseconds: current value is {value}";
    }
}

crate::described_error!(RetryBudgetError);

impl Described for RetryBudgetError {
    fn code(&self) -> &'static str {
        match self {
            Self::BadRatio { .. } => "RATIO_OUT_OF_RANGE",
            Self::BadMinPerSecond { .. } => "MIN_PER_SECOND_OUT_OF_RANGE",
            Self::BadWindow { .. } => "WINDOW_OUT_OF_RANGE",
            Self::Time(e) => e.code(),
        }
    }

    /// Names inside [`BudgetOptions`]; the binding prefixes the argument.
    fn param(&self) -> Option<String> {
        match self {
            Self::BadRatio { .. } => Some("ratio".into()),
            Self::BadMinPerSecond { .. } => Some("minPerSecond".into()),
            Self::BadWindow { .. } => Some("windowMs".into()),
            Self::Time(e) => Described::param(e),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Self::Time(e) => e.kind(),
            _ => Kind::Range,
        }
    }

    fn message(&self) -> Message {
        match *self {
            Self::BadRatio { value } => Message::new(msg::BAD_RATIO).arg("value", value),
            Self::BadMinPerSecond { value } => {
                Message::new(msg::BAD_MIN_PER_SECOND).arg("max", MAX_MIN_PER_SECOND).arg("value", value)
            }
            Self::BadWindow { value } => Message::new(msg::BAD_WINDOW).arg("max", MAX_WINDOW_MS).arg("value", value),
            Self::Time(ref e) => e.message(),
        }
    }
}

/// A retry budget as the caller writes it, every field optional; the
/// defaults are Finagle's: `ratio` 0.2 (20 % of requests), `minPerSecond` 10,
/// `windowMs` 10 000.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BudgetOptions {
    /// Retries allowed per request in the window, `[0, 1]` (default 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub ratio: Option<f64>,
    /// Retries always allowed per second (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub min_per_second: Option<f64>,
    /// The sliding window (default 10 000, at most one day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub window_ms: Option<f64>,
}

/// What a budget's window holds now, for logs and dashboards.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BudgetCounts {
    /// First attempts counted in the window.
    pub requests: u64,
    /// Retries granted in the window.
    pub retries: u64,
    /// Retries always allowed per window ([`RetryBudget::floor`]).
    pub floor: f64,
}

impl From<DeadlineError> for RetryBudgetError {
    fn from(e: DeadlineError) -> Self {
        Self::Time(e)
    }
}

/// A retry allowance shared across calls, over a sliding window of
/// [`RETRY_BUDGET_BUCKETS`] buckets.
///
/// The window is bucketed: counts older than `windowMs` leave a bucket at a
/// time, so the effective window is between `windowMs × (1 − 1/RETRY_BUDGET_BUCKETS)`
/// and `windowMs`. Time is passed in; a `now` earlier than one already seen
/// (which a monotonic clock never produces) counts in the newest bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryBudget {
    ratio: f64,
    min_per_second: f64,
    window_ms: f64,
    bucket_ms: f64,
    requests: [u64; RETRY_BUDGET_BUCKETS],
    retries: [u64; RETRY_BUDGET_BUCKETS],
    /// Absolute index (`floor(now / bucket_ms)`) of the newest bucket, once one is seen.
    head: Option<u64>,
}

impl RetryBudget {
    /// `ratio` in `[0, 1]`, `min_per_second` in `0 ..= MAX_MIN_PER_SECOND`,
    /// `window_ms` in `1 ..= MAX_WINDOW_MS`.
    pub fn new(ratio: f64, min_per_second: f64, window_ms: f64) -> Result<Self, RetryBudgetError> {
        if !(0.0..=1.0).contains(&ratio) {
            return Err(RetryBudgetError::BadRatio { value: ratio });
        }
        if !(0.0..=MAX_MIN_PER_SECOND).contains(&min_per_second) {
            return Err(RetryBudgetError::BadMinPerSecond { value: min_per_second });
        }
        if !(1.0..=MAX_WINDOW_MS).contains(&window_ms) {
            return Err(RetryBudgetError::BadWindow { value: window_ms });
        }
        Ok(Self {
            ratio: ratio + 0.0,
            min_per_second: min_per_second + 0.0,
            window_ms,
            bucket_ms: window_ms / RETRY_BUDGET_BUCKETS as f64,
            requests: [0; RETRY_BUDGET_BUCKETS],
            retries: [0; RETRY_BUDGET_BUCKETS],
            head: None,
        })
    }

    /// [`RetryBudget::new`] from the caller's options.
    pub fn from_options(options: &BudgetOptions) -> Result<Self, RetryBudgetError> {
        Self::new(
            options.ratio.unwrap_or(0.2),
            options.min_per_second.unwrap_or(10.0),
            options.window_ms.unwrap_or(10_000.0),
        )
    }

    /// [`RetryBudget::counts`] with the floor, as [`BudgetCounts`].
    pub fn window(&mut self, now_ms: f64) -> Result<BudgetCounts, RetryBudgetError> {
        let (requests, retries) = self.counts(now_ms)?;
        Ok(BudgetCounts { requests, retries, floor: self.floor() })
    }

    /// Retries always allowed per window: `minPerSecond × windowMs / 1000`.
    pub fn floor(&self) -> f64 {
        self.min_per_second * self.window_ms / 1000.0
    }

    /// Counts one original request (a first attempt).
    pub fn record_request(&mut self, now_ms: f64) -> Result<(), RetryBudgetError> {
        let slot = self.advance(now_ms)?;
        self.requests[slot] = self.requests[slot].saturating_add(1);
        Ok(())
    }

    /// Withdraws one retry if `retries + 1 ≤ ratio × requests + floor` in the
    /// window; `Ok(false)` (and nothing recorded) otherwise.
    pub fn try_retry(&mut self, now_ms: f64) -> Result<bool, RetryBudgetError> {
        let slot = self.advance(now_ms)?;
        let (requests, retries) = self.sums();
        // u64 → f64 rounds only past 2^53 events, long after any window fills.
        let allowed = (retries as f64) + 1.0 <= self.ratio * requests as f64 + self.floor();
        if allowed {
            self.retries[slot] = self.retries[slot].saturating_add(1);
        }
        Ok(allowed)
    }

    /// `(requests, retries)` in the window ending at `now_ms`.
    pub fn counts(&mut self, now_ms: f64) -> Result<(u64, u64), RetryBudgetError> {
        self.advance(now_ms)?;
        Ok(self.sums())
    }

    fn sums(&self) -> (u64, u64) {
        let add = |a: &[u64]| a.iter().fold(0u64, |s, &x| s.saturating_add(x));
        (add(&self.requests), add(&self.retries))
    }

    /// Moves the window to `now_ms`, clearing buckets that fell out of it, and
    /// returns the slot of the newest bucket.
    fn advance(&mut self, now_ms: f64) -> Result<usize, RetryBudgetError> {
        let now = check_ms("now", now_ms)?;
        // now ≤ 2^53 and bucket_ms ≥ 0.1, so the index is below 2^57: exact in u64.
        let index = (now / self.bucket_ms).floor() as u64;
        let head = match self.head {
            None => index,
            Some(head) if index > head => {
                let gap = index - head;
                if gap >= RETRY_BUDGET_BUCKETS as u64 {
                    self.requests = [0; RETRY_BUDGET_BUCKETS];
                    self.retries = [0; RETRY_BUDGET_BUCKETS];
                } else {
                    for k in 1..=gap {
                        let slot = slot_of(head + k);
                        self.requests[slot] = 0;
                        self.retries[slot] = 0;
                    }
                }
                index
            }
            Some(head) => head,
        };
        self.head = Some(head);
        Ok(slot_of(head))
    }
}

fn slot_of(index: u64) -> usize {
    // The remainder is below RETRY_BUDGET_BUCKETS, so it fits any usize.
    (index % RETRY_BUDGET_BUCKETS as u64) as usize
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn budget_allows_ratio_plus_floor_and_slides() {
        // 20 % of requests, no floor, 10 s window of 1 s buckets.
        let mut b = RetryBudget::new(0.2, 0.0, 10_000.0).unwrap();
        for i in 0..10 {
            b.record_request(f64::from(i)).unwrap();
        }
        assert!(b.try_retry(10.0).unwrap());
        assert!(b.try_retry(11.0).unwrap());
        assert!(!b.try_retry(12.0).unwrap(), "2 retries per 10 requests");
        assert_eq!(b.counts(12.0).unwrap(), (10, 2));
        // 10 s later every bucket has left the window.
        assert_eq!(b.counts(10_500.0).unwrap(), (0, 0));
        assert!(!b.try_retry(10_500.0).unwrap());
        // A floor of 1 retry/s allows 10 per 10 s window with no traffic.
        let mut f = RetryBudget::new(0.0, 1.0, 10_000.0).unwrap();
        let allowed = (0..20).filter(|&i| f.try_retry(f64::from(i)).unwrap()).count();
        assert_eq!(allowed, 10);
        // Time going backwards counts in the newest bucket and does not panic.
        assert!(!f.try_retry(0.0).unwrap());
        assert!(f.try_retry(f64::NAN).is_err());
    }

    #[test]
    fn options_default_to_finagles_and_errors_name_the_option() {
        use crate::core::error::{Described, Within};
        let mut b = RetryBudget::from_options(&BudgetOptions::default()).unwrap();
        assert_eq!(b.window(0.0).unwrap(), BudgetCounts { requests: 0, retries: 0, floor: 100.0 });
        let e = Within::new(
            "options",
            RetryBudget::from_options(&BudgetOptions { ratio: Some(1.5), ..Default::default() }).unwrap_err(),
        );
        assert_eq!((e.param().as_deref(), e.code()), (Some("options.ratio"), "RATIO_OUT_OF_RANGE"));
        let e = RetryBudget::from_options(&BudgetOptions { window_ms: Some(0.0), ..Default::default() }).unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("windowMs"), "WINDOW_OUT_OF_RANGE"));
    }

    #[test]
    fn rejects_bad_settings_with_clear_errors() {
        assert_eq!(RetryBudget::new(1.5, 0.0, 1_000.0), Err(RetryBudgetError::BadRatio { value: 1.5 }));
        assert!(matches!(RetryBudget::new(f64::NAN, 0.0, 1_000.0), Err(RetryBudgetError::BadRatio { .. })));
        assert!(matches!(RetryBudget::new(-0.1, 0.0, 1_000.0), Err(RetryBudgetError::BadRatio { .. })));
        assert!(matches!(RetryBudget::new(0.2, -1.0, 1_000.0), Err(RetryBudgetError::BadMinPerSecond { .. })));
        assert!(matches!(RetryBudget::new(0.2, f64::INFINITY, 1_000.0), Err(RetryBudgetError::BadMinPerSecond { .. })));
        assert!(matches!(RetryBudget::new(0.2, 1.0, 0.5), Err(RetryBudgetError::BadWindow { .. })));
        assert!(matches!(RetryBudget::new(0.2, 1.0, f64::NAN), Err(RetryBudgetError::BadWindow { .. })));
        let e = RetryBudget::new(0.2, 1.0, 0.0).unwrap_err().to_string();
        assert!(e.starts_with("'windowMs' must be between 1 and"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Invariant 1: the budget never allows more than ratio × requests +
        /// floor in its window, and its counts match an exact oracle.
        #[test]
        fn budget_matches_oracle(
            ratio in prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64],
            per_second in prop_oneof![Just(0.0), 0.0..5.0f64],
            window in 1.0..5_000.0f64,
            events in proptest::collection::vec((any::<bool>(), 0.0..800.0f64), 1..200),
        ) {
            let mut b = RetryBudget::new(ratio, per_second, window).unwrap();
            let bucket = window / RETRY_BUDGET_BUCKETS as f64;
            let mut log: Vec<(u64, bool)> = Vec::new(); // (bucket index, is_retry)
            let mut now = 0.0;
            let mut newest = 0u64;
            for (is_retry, step) in events {
                now += step;
                let idx = ((now / bucket).floor() as u64).max(newest);
                newest = idx;
                let in_window = |log: &Vec<(u64, bool)>, retry: bool| {
                    log.iter().filter(|(i, r)| *r == retry && i + RETRY_BUDGET_BUCKETS as u64 > idx).count() as u64
                };
                let mut allowed = false;
                if is_retry {
                    allowed = b.try_retry(now).unwrap();
                    let (req, ret) = (in_window(&log, false), in_window(&log, true));
                    prop_assert_eq!(allowed, (ret + 1) as f64 <= ratio * req as f64 + b.floor());
                    if allowed { log.push((idx, true)); }
                } else {
                    b.record_request(now).unwrap();
                    log.push((idx, false));
                }
                let (req, ret) = b.counts(now).unwrap();
                prop_assert_eq!((req, ret), (in_window(&log, false), in_window(&log, true)));
                // Requests can leave the window before the retries they paid
                // for, so the bound is checked when a retry is granted.
                if allowed {
                    prop_assert!(ret as f64 <= ratio * req as f64 + b.floor());
                }
            }
        }
    }
}
