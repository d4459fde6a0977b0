//! Backoff schedules: how long to wait before each retry.
//!
//! # Why its own module
//! A schedule depends only on its three numbers and a seed, not on the
//! deadline or the attempts: the policy (`super`) asks for the next delay
//! and decides whether sleeping it leaves room for an attempt. Keeping the
//! schedule apart keeps its invariant (below) testable on its own, and
//! `backoffSchedule` shows a user the exact delays a seed gives.
//!
//! # Jitter, by name or by fraction
//! `jitter` is a fraction of the ceiling that jitter may take off (0 to 1),
//! or one of AWS's named schemes ("Exponential Backoff And Jitter"): `"full"`
//! (anywhere in `[0, ceiling]`, the same as `1`), `"equal"` (in `[ceiling / 2,
//! ceiling]`, the same as `0.5`) and `"decorrelated"` (`min(maxMs, uniform
//! in [baseMs, 3 × the previous delay])`, starting from `baseMs`: each delay
//! follows the last one rather than the attempt number).
//!
//! # Invariants (each is a property test in this module)
//! 1. A backoff delay lies in `[c × (1 − jitter), c]` where the ceiling
//!    `c = min(maxMs, baseMs × 2^(k−1))` never decreases with `k`; a seed
//!    always yields the same schedule.
//! 2. A decorrelated delay lies in `[baseMs, min(maxMs, 3 × previous)]`;
//!    a seed always yields the same schedule.

use serde::{Deserialize, Serialize};

use super::{RetryError, MAX_ATTEMPTS};
use crate::core::deadline::check_ms;
use crate::core::rng::SplitMix64;

/// The backoff when the caller does not say: full jitter (`jitter: 1`) under a
/// ceiling that doubles from 100 ms up to 2 s, so synchronized clients spread
/// out.
pub const DEFAULT_BACKOFF: BackoffOptions =
    BackoffOptions { base_ms: 100.0, max_ms: 2_000.0, jitter: JitterOption::Fraction(1.0) };

/// How jitter spreads the delays (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    /// Subtractive: the delay is `ceiling × (1 − fraction × u)`; `"full"` is
    /// 1, `"equal"` 0.5.
    Fraction(f64),
    /// `min(maxMs, uniform in [baseMs, 3 × previous])`.
    Decorrelated,
}

/// `jitter` as the caller writes it: a number, or a scheme's name.
/// [`Backoff::with_jitter`] validates it.
#[derive(Debug, Clone, PartialEq)]
pub enum JitterOption {
    /// A fraction, to be in `[0, 1]`.
    Fraction(f64),
    /// A name, to be `"full"`, `"equal"` or `"decorrelated"`.
    Name(String),
}

impl JitterOption {
    /// The validated jitter: [`RetryError::BadJitter`] for a fraction
    /// outside `[0, 1]` (NaN included), [`RetryError::UnknownJitter`] for
    /// another name.
    pub fn jitter(&self) -> Result<Jitter, RetryError> {
        match self {
            Self::Fraction(v) if (0.0..=1.0).contains(v) => Ok(Jitter::Fraction(*v + 0.0)),
            Self::Fraction(v) => Err(RetryError::BadJitter { value: *v }),
            Self::Name(n) => match n.as_str() {
                "full" => Ok(Jitter::Fraction(1.0)),
                "equal" => Ok(Jitter::Fraction(0.5)),
                "decorrelated" => Ok(Jitter::Decorrelated),
                // The first 64 bytes when that is a whole character, else all of it.
                _ => Err(RetryError::UnknownJitter { value: n.get(..64).unwrap_or(n).into() }),
            },
        }
    }
}

impl Serialize for JitterOption {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Fraction(v) => s.serialize_f64(*v),
            Self::Name(n) => s.serialize_str(n),
        }
    }
}

impl<'de> Deserialize<'de> for JitterOption {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = JitterOption;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("a number between 0 and 1, or \"full\", \"equal\" or \"decorrelated\"")
            }
            fn visit_f64<E>(self, v: f64) -> Result<JitterOption, E> {
                Ok(JitterOption::Fraction(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<JitterOption, E> {
                Ok(JitterOption::Fraction(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<JitterOption, E> {
                Ok(JitterOption::Fraction(v as f64))
            }
            fn visit_str<E>(self, v: &str) -> Result<JitterOption, E> {
                Ok(JitterOption::Name(v.into()))
            }
            fn visit_string<E>(self, v: String) -> Result<JitterOption, E> {
                Ok(JitterOption::Name(v))
            }
        }
        d.deserialize_any(V)
    }
}

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
    jitter: Jitter,
}

impl Backoff {
    /// Validates the backoff: `base_ms` and `max_ms` are durations in ms with
    /// `max_ms >= base_ms` ([`RetryError::MaxBelowBase`]), `jitter` is in
    /// `[0, 1]` ([`RetryError::BadJitter`]).
    pub fn new(base_ms: f64, max_ms: f64, jitter: f64) -> Result<Self, RetryError> {
        Self::with_jitter(base_ms, max_ms, &JitterOption::Fraction(jitter))
    }

    /// [`Backoff::new`] with a jitter given by fraction or by name
    /// ([`JitterOption::jitter`]).
    pub fn with_jitter(base_ms: f64, max_ms: f64, jitter: &JitterOption) -> Result<Self, RetryError> {
        let base_ms = check_ms("baseMs", base_ms)?;
        let max_ms = check_ms("maxMs", max_ms)?;
        if max_ms < base_ms {
            return Err(RetryError::MaxBelowBase { base_ms, max_ms });
        }
        Ok(Self { base_ms, max_ms, jitter: jitter.jitter()? })
    }

    /// The first retry's ceiling, in ms; it doubles with each retry.
    pub fn base_ms(&self) -> f64 {
        self.base_ms
    }
    /// The largest delay, in ms: jitter never lengthens one past it.
    pub fn max_ms(&self) -> f64 {
        self.max_ms
    }
    /// How jitter spreads the delays.
    pub fn jitter(&self) -> Jitter {
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

    /// The jittered delay before retry `retry`, after a previous delay of
    /// `previous_ms` (read by decorrelated jitter only; 0 before the first
    /// retry). Draws exactly one number from `rng`, whatever the jitter, so
    /// schedules stay aligned across settings.
    pub fn delay(&self, retry: u32, previous_ms: f64, rng: &mut SplitMix64) -> f64 {
        let u = rng.next_f64();
        match self.jitter {
            Jitter::Fraction(j) => self.ceiling(retry) * (1.0 - j * u),
            Jitter::Decorrelated => {
                let previous = if previous_ms > self.base_ms { previous_ms } else { self.base_ms };
                let top = previous * 3.0;
                let d = self.base_ms + (top - self.base_ms) * u;
                if d < self.max_ms {
                    d
                } else {
                    self.max_ms
                }
            }
        }
    }

    /// The first `retries` delays for `seed`.
    pub fn schedule(&self, retries: u32, seed: u64) -> Result<Vec<f64>, RetryError> {
        if retries > MAX_ATTEMPTS {
            return Err(RetryError::TooManyRetries { value: retries });
        }
        let mut rng = SplitMix64::new(seed);
        let mut previous = 0.0;
        Ok((1..=retries)
            .map(|k| {
                previous = self.delay(k, previous, &mut rng);
                previous
            })
            .collect())
    }
}

/// A backoff as the caller writes it (`backoff` in the retry options);
/// [`BackoffOptions::backoff`] validates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BackoffOptions {
    /// The first retry's ceiling.
    pub base_ms: f64,
    /// No delay exceeds this (at least `baseMs`).
    pub max_ms: f64,
    /// 0: plain exponential; 1 or `"full"`: anywhere in `[0, ceiling]`; 0.5 or
    /// `"equal"`: in `[ceiling / 2, ceiling]`; `"decorrelated"`: `min(maxMs,
    /// uniform in [baseMs, 3 × the previous delay])`. No delay exceeds `maxMs`.
    #[cfg_attr(feature = "typescript", tsify(type = "number | \"full\" | \"equal\" | \"decorrelated\""))]
    pub jitter: JitterOption,
}

impl BackoffOptions {
    /// Validates the options into a [`Backoff`] (see [`Backoff::new`]).
    pub fn backoff(&self) -> Result<Backoff, RetryError> {
        Backoff::with_jitter(self.base_ms, self.max_ms, &self.jitter)
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

    #[test]
    fn named_jitters_are_aws_schemes() {
        let name = |n: &str| Backoff::with_jitter(100.0, 1_000.0, &JitterOption::Name(n.into()));
        assert_eq!(
            name("full").unwrap().schedule(8, 3).unwrap(),
            Backoff::new(100.0, 1_000.0, 1.0).unwrap().schedule(8, 3).unwrap()
        );
        assert_eq!(
            name("equal").unwrap().schedule(8, 3).unwrap(),
            Backoff::new(100.0, 1_000.0, 0.5).unwrap().schedule(8, 3).unwrap()
        );
        let d = name("decorrelated").unwrap().schedule(30, 5).unwrap();
        let mut previous = 100.0f64;
        for x in &d {
            assert!(*x >= 100.0 && *x <= 1_000.0f64.min(3.0 * previous), "{x} after {previous}");
            previous = *x;
        }
        assert_eq!(d, name("decorrelated").unwrap().schedule(30, 5).unwrap());
        assert!(matches!(name("Full"), Err(RetryError::UnknownJitter { .. })));
        assert!(matches!(name(""), Err(RetryError::UnknownJitter { .. })));
        assert!(matches!(Backoff::new(1.0, 2.0, f64::NAN), Err(RetryError::BadJitter { .. })));
        // The default keeps today's schedule: full jitter.
        assert_eq!(DEFAULT_BACKOFF.backoff().unwrap().jitter(), Jitter::Fraction(1.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Invariant 2.
        #[test]
        fn decorrelated_bounds(base in 0.0..5_000.0f64, extra in 0.0..60_000.0f64, seed in any::<u64>()) {
            let b = Backoff::with_jitter(base, base + extra, &JitterOption::Name("decorrelated".into())).unwrap();
            let s = b.schedule(30, seed).unwrap();
            prop_assert_eq!(&s, &b.schedule(30, seed).unwrap());
            let mut previous = base;
            for d in &s {
                prop_assert!(*d >= base && *d <= b.max_ms() && *d <= 3.0 * previous + 1e-9 && d.is_finite());
                previous = *d;
            }
        }

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
