//! Hedging: a second attempt after a delay, while the first may still answer.
//!
//! # Why so little is here
//! Hedging has no arithmetic beyond "is any time left": the first answer
//! wins, the others are aborted, and no attempt starts after the deadline.
//! Timers, signals and racing the answers are the host's (`js/hedge.js`,
//! `src/web/retry.rs`); the core validates the policy, so both hosts refuse
//! the same values with the same words.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::deadline::DeadlineError;

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
