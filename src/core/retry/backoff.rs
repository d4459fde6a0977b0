//! Backoff schedules: how long to wait before each retry.
//!
//! # Why its own module
//! A schedule depends only on its three numbers and a seed, not on the
//! deadline or the attempts: the policy (`super`) asks for the next delay
//! and decides whether sleeping it leaves room for an attempt. Keeping the
//! schedule apart keeps its invariant (below) testable on its own, and
//! `backoffSchedule` shows a user the exact delays a seed gives.
//!
//! # Invariants (each is a property test in this module)
//! 1. A backoff delay lies in `[c × (1 − jitter), c]` where the ceiling
//!    `c = min(maxMs, baseMs × 2^(k−1))` never decreases with `k`; a seed
//!    always yields the same schedule.

use serde::{Deserialize, Serialize};

use super::{RetryError, MAX_ATTEMPTS};
use crate::core::deadline::check_ms;
use crate::core::rng::SplitMix64;

/// The backoff when the caller does not say: full jitter (`jitter: 1`) under a
/// ceiling that doubles from 100 ms up to 2 s, so synchronized clients spread
/// out.
pub const DEFAULT_BACKOFF: BackoffOptions = BackoffOptions { base_ms: 100.0, max_ms: 2_000.0, jitter: 1.0 };

/// Exponential backoff with subtractive jitter.
///
/// Before retry `k` (1 for the first retry) the ceiling is
/// `min(maxMs, baseMs × 2^(k−1))` and the delay is `ceiling × (1 − jitter × u)`
/// with `u` uniform in `[0, 1)`: `jitter = 0` is plain exponential backoff,
/// `1` is "full jitter", `0.5` is "equal jitter". Jitter only ever shortens a
/// delay, so `maxMs` is a true maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    base_ms: f64,
    max_ms: f64,
    jitter: f64,
}

impl Backoff {
    /// Validates the backoff: `base_ms` and `max_ms` are durations in ms with
    /// `max_ms >= base_ms` ([`RetryError::MaxBelowBase`]), `jitter` is in
    /// `[0, 1]` ([`RetryError::BadJitter`]).
    pub fn new(base_ms: f64, max_ms: f64, jitter: f64) -> Result<Self, RetryError> {
        let base_ms = check_ms("baseMs", base_ms)?;
        let max_ms = check_ms("maxMs", max_ms)?;
        if max_ms < base_ms {
            return Err(RetryError::MaxBelowBase { base_ms, max_ms });
        }
        if !(0.0..=1.0).contains(&jitter) {
            return Err(RetryError::BadJitter { value: jitter });
        }
        Ok(Self { base_ms, max_ms, jitter: jitter + 0.0 })
    }

    /// The first retry's ceiling, in ms; it doubles with each retry.
    pub fn base_ms(&self) -> f64 {
        self.base_ms
    }
    /// The largest delay, in ms: jitter never lengthens one past it.
    pub fn max_ms(&self) -> f64 {
        self.max_ms
    }
    /// How much of the ceiling jitter may take off, in `[0, 1]`.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The un-jittered delay before retry `retry` (1-based); 0 for retry 0.
    pub fn ceiling(&self, retry: u32) -> f64 {
        if retry == 0 {
            return 0.0;
        }
        // 2^1023 is finite; past it the product saturates to ∞ and `min` caps it.
        let exp = retry.saturating_sub(1).min(1023) as i32;
        let c = self.base_ms * 2f64.powi(exp);
        if c < self.max_ms {
            c
        } else {
            self.max_ms
        }
    }

    /// The jittered delay before retry `retry`. Draws exactly one number from
    /// `rng`, whatever the jitter, so schedules stay aligned across settings.
    pub fn delay(&self, retry: u32, rng: &mut SplitMix64) -> f64 {
        let u = rng.next_f64();
        self.ceiling(retry) * (1.0 - self.jitter * u)
    }

    /// The first `retries` delays for `seed`.
    pub fn schedule(&self, retries: u32, seed: u64) -> Result<Vec<f64>, RetryError> {
        if retries > MAX_ATTEMPTS {
            return Err(RetryError::TooManyRetries { value: retries });
        }
        let mut rng = SplitMix64::new(seed);
        Ok((1..=retries).map(|k| self.delay(k, &mut rng)).collect())
    }
}

/// A backoff as the caller writes it (`backoff` in the retry options);
/// [`BackoffOptions::backoff`] validates it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BackoffOptions {
    /// The first retry's ceiling.
    pub base_ms: f64,
    /// No delay exceeds this (at least `baseMs`).
    pub max_ms: f64,
    /// 0: plain exponential; 1: anywhere in `[0, ceiling]`; jitter only shortens a delay.
    pub jitter: f64,
}

impl BackoffOptions {
    /// Validates the options into a [`Backoff`] (see [`Backoff::new`]).
    pub fn backoff(&self) -> Result<Backoff, RetryError> {
        Backoff::new(self.base_ms, self.max_ms, self.jitter)
    }
}

impl Default for BackoffOptions {
    fn default() -> Self {
        DEFAULT_BACKOFF
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn backoff_schedule_is_exponential_capped_and_deterministic() {
        let b = Backoff::new(100.0, 1_000.0, 0.0).unwrap();
        assert_eq!(b.schedule(6, 7).unwrap(), vec![100.0, 200.0, 400.0, 800.0, 1_000.0, 1_000.0]);
        assert_eq!(b.ceiling(0), 0.0);
        assert_eq!(b.ceiling(u32::MAX), 1_000.0);
        let j = Backoff::new(100.0, 1_000.0, 0.5).unwrap();
        assert_eq!(j.schedule(5, 99).unwrap(), j.schedule(5, 99).unwrap());
        assert_ne!(j.schedule(5, 99).unwrap(), j.schedule(5, 100).unwrap());
        assert!(j.schedule(MAX_ATTEMPTS + 1, 0).is_err());
        let zero = Backoff::new(0.0, 0.0, 1.0).unwrap();
        assert_eq!(zero.ceiling(5_000), 0.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Invariant 1.
        #[test]
        fn backoff_bounds(base in 0.0..5_000.0f64, extra in 0.0..60_000.0f64, jitter in 0.0..=1.0f64, seed in any::<u64>()) {
            let b = Backoff::new(base, base + extra, jitter).unwrap();
            let s = b.schedule(30, seed).unwrap();
            prop_assert_eq!(&s, &b.schedule(30, seed).unwrap());
            let mut prev = 0.0;
            for (i, d) in s.iter().enumerate() {
                let c = b.ceiling(i as u32 + 1);
                prop_assert!(c >= prev && c <= b.max_ms());
                prop_assert!(*d <= c && *d >= c * (1.0 - jitter) - 1e-9 && d.is_finite());
                prev = c;
            }
        }
    }
}
