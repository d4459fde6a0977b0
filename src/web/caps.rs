//! Platform caps, on the Rust API's [`Deadline`].
//!
//! The built-in figures and the cap fold ([`crate::core::caps`]) are the
//! core's; this file reads the clock and builds the [`Deadline`], as
//! `js/caps.js` does.

use super::{timers, Deadline, Error};
use crate::core::caps::{self, CapsError};
pub use crate::core::caps::{Bound, CapOverrides, Platform, PlatformCaps, Tier, Trigger};

impl From<CapsError> for Error {
    fn from(error: CapsError) -> Self {
        let param = match &error {
            CapsError::Time(e) => return Error::from(*e),
            CapsError::UnknownPlatform { .. } => "platform",
            CapsError::UnknownTier { .. } => "plan",
            CapsError::UnknownTrigger { .. } | CapsError::UnsupportedTrigger { .. } => "trigger",
            CapsError::ZeroCap { param } | CapsError::CustomWith { param } => param,
        };
        Error::described(param, &error)
    }
}

impl Deadline {
    /// `now + min(product_ms, the platform's wall-clock caps) − fallback_reserve_ms`,
    /// and which cap bound it. Get `caps` from [`PlatformCaps::builtin`] (the
    /// figures this package ships, with sources) or [`PlatformCaps::custom`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `productMs` or `fallbackReserveMs`
    /// for NaN, ±∞ or negatives. A reserve at or above the smallest cap is a
    /// shortage, not an error: the deadline is `now`, already expired.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, Platform, PlatformCaps, Tier, Trigger};
    /// let caps = PlatformCaps::builtin(Platform::CloudflareWorkers, Some(Tier::Paid), Trigger::Fetch)?;
    /// let (deadline, bound) = Deadline::for_platform(&caps, 8_000.0, 500.0)?;
    /// # let _ = (deadline, bound); Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn for_platform(
        caps: &PlatformCaps,
        product_ms: f64,
        fallback_reserve_ms: f64,
    ) -> Result<(Deadline, Bound), Error> {
        let answer = caps::for_platform(timers::now(), caps, product_ms, fallback_reserve_ms)?;
        Ok((Deadline::at(answer.at)?, answer.bound))
    }
}
