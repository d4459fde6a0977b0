//! Hedging: a second attempt after a delay, while the first may still answer.
//!
//! # Why so little is here
//! Hedging has no arithmetic beyond "is any time left": the first answer
//! wins, the others are aborted, and no attempt starts after the deadline.
//! Timers, signals and racing the answers are the host's (`js/hedge.js`,
//! `src/web/retry.rs`); the core validates the policy, so both hosts refuse
//! the same values with the same words.

use serde::{Deserialize, Serialize};

use crate::core::deadline::check_ms;
use crate::core::retry::{RetryError, MAX_ATTEMPTS};

/// Validates a hedging policy (`hedge` in JS): `delay_ms` before each extra
/// attempt, at most `max_attempts` attempts over the call. Hedging has no
/// arithmetic beyond "is any time left", so the rest (timers, first answer
/// wins, losers aborted) is the host's. Returns the delay (`-0` as `0`).
pub fn check_hedge(delay_ms: f64, max_attempts: u32) -> Result<f64, RetryError> {
    let delay_ms = check_ms("delayMs", delay_ms)?;
    if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
        return Err(RetryError::BadMaxAttempts { value: max_attempts });
    }
    Ok(delay_ms)
}

/// Attempts of a hedge when the caller does not say: the first and one hedge.
pub const DEFAULT_HEDGE_ATTEMPTS: u32 = 2;

/// A hedging policy as the caller writes it (`hedge`'s options): the delay
/// before each extra attempt and the most attempts over the call
/// ([`DEFAULT_HEDGE_ATTEMPTS`] unless given).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HedgeOptions {
    /// Wait before each extra attempt while none has answered.
    pub delay_ms: f64,
    /// 1–100, default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub max_attempts: Option<u32>,
}

/// A validated hedging policy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct HedgePolicy {
    /// Wait before each extra attempt while none has answered, in ms (`delayMs` in JS).
    pub delay_ms: f64,
    /// The most attempts over the call, the first included: 1–100 (`maxAttempts` in JS).
    pub max_attempts: u32,
}

impl HedgeOptions {
    /// The validated policy ([`check_hedge`]), the default filled in; `-0` becomes `0`.
    pub fn policy(&self) -> Result<HedgePolicy, RetryError> {
        let max_attempts = self.max_attempts.unwrap_or(DEFAULT_HEDGE_ATTEMPTS);
        Ok(HedgePolicy { delay_ms: check_hedge(self.delay_ms, max_attempts)?, max_attempts })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::core::deadline::DeadlineError;

    #[test]
    fn options_default_to_two_attempts_and_errors_name_the_option() {
        use crate::core::error::Described;
        assert_eq!(
            HedgeOptions { delay_ms: -0.0, max_attempts: None }.policy(),
            Ok(HedgePolicy { delay_ms: 0.0, max_attempts: DEFAULT_HEDGE_ATTEMPTS })
        );
        let e = HedgeOptions { delay_ms: 1.0, max_attempts: Some(101) }.policy().unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("maxAttempts"), "MAX_ATTEMPTS_OUT_OF_RANGE"));
        let e = HedgeOptions { delay_ms: -1.0, max_attempts: None }.policy().unwrap_err();
        assert_eq!((e.param().as_deref(), e.code()), (Some("delayMs"), "NEGATIVE"));
    }

    #[test]
    fn hedge_policy_is_checked_by_name() {
        assert_eq!(check_hedge(50.0, 2), Ok(50.0));
        assert!(check_hedge(-0.0, 1).unwrap().is_sign_positive());
        assert!(matches!(
            check_hedge(f64::NAN, 2),
            Err(RetryError::Time(DeadlineError::NotFinite { param: "delayMs", .. }))
        ));
        assert!(matches!(
            check_hedge(-1.0, 2),
            Err(RetryError::Time(DeadlineError::Negative { param: "delayMs", .. }))
        ));
        assert_eq!(check_hedge(1.0, 0), Err(RetryError::BadMaxAttempts { value: 0 }));
        assert_eq!(check_hedge(1.0, MAX_ATTEMPTS + 1), Err(RetryError::BadMaxAttempts { value: MAX_ATTEMPTS + 1 }));
    }
}
