//! How long a server asked a client to wait before trying again: the
//! `Retry-After`, `RateLimit-Reset` and `X-RateLimit-Reset` headers of a
//! failed attempt's response, read into one wait in ms.
//!
//! # Why the wall clock is a second input
//! A wait in seconds needs no clock. An HTTP date (`Retry-After: Wed, 21 Oct
//! 2026 07:28:00 GMT`) and a Unix epoch (`X-RateLimit-Reset: 1796000000`) are
//! instants on the wall clock, which the monotonic timeline of deadlines does
//! not share. The core reads no clock, so [`server_wait`] answers
//! [`ServerWait::NeedsWallClock`] when it meets one of those, and the host asks
//! again with `Date.now()`: the wall clock is read only when a date is present.
//!
//! # Invariants (unit tests below)
//! 1. Never panics, whatever the header text (junk, negative, huge, non-ASCII).
//! 2. A wait is finite and at least 0; a date already past waits 0.
//! 3. The first header that parses wins, in the order `Retry-After`,
//!    `RateLimit-Reset`, `X-RateLimit-Reset`; one that does not parse is
//!    ignored, as if absent.

use crate::core::deadline::MAX_MS;

/// Above this, an `X-RateLimit-Reset` value is a Unix epoch in seconds, not a
/// wait in seconds (10^9 s is 2001-09-09; no server asks for a 31-year wait).
pub const EPOCH_THRESHOLD_S: f64 = 1e9;

/// What the headers say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServerWait {
    /// No header, or none that parses.
    None,
    /// Wait this long, in ms, from the moment the response was read.
    Ms(f64),
    /// A header holds a wall-clock instant: ask again with the wall clock.
    NeedsWallClock,
}

/// The wait the headers ask for. `wall_now_ms` is the wall clock in ms since
/// the Unix epoch (`Date.now()`), or NaN when the host has not read it.
pub fn server_wait(
    retry_after: Option<&str>,
    ratelimit_reset: Option<&str>,
    x_ratelimit_reset: Option<&str>,
    wall_now_ms: f64,
) -> ServerWait {
    if let Some(v) = retry_after {
        if let Some(s) = delta_seconds(v) {
            return ServerWait::Ms(seconds_ms(s));
        }
        if let Some(epoch_s) = http_date(blank_trimmed(v)) {
            return until(epoch_s * 1000.0, wall_now_ms);
        }
    }
    if let Some(s) = ratelimit_reset.and_then(delta_seconds) {
        return ServerWait::Ms(seconds_ms(s));
    }
    if let Some(s) = x_ratelimit_reset.and_then(delta_seconds) {
        if s > EPOCH_THRESHOLD_S {
            return until(s * 1000.0, wall_now_ms);
        }
        return ServerWait::Ms(seconds_ms(s));
    }
    ServerWait::None
}

/// From now (`wall_now_ms`, NaN: not read) to the wall-clock instant `at_ms`.
fn until(at_ms: f64, wall_now_ms: f64) -> ServerWait {
    if !wall_now_ms.is_finite() {
        return ServerWait::NeedsWallClock;
    }
    let wait = at_ms - wall_now_ms;
    ServerWait::Ms(if wait > 0.0 { wait.min(MAX_MS) } else { 0.0 })
}

fn seconds_ms(s: f64) -> f64 {
    (s * 1000.0).min(MAX_MS)
}

/// An HTTP date as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form
/// RFC 9110 (5.6.7) requires senders to use, as seconds since the Unix
/// epoch; `None` for anything else (an impossible day included). The two
/// obsolete forms (RFC 850, asctime) are not read: a `Retry-After` in one of
/// them counts as absent. Written here rather than taken from the `httpdate`
/// crate, and without the obsolete forms: either made the main `.wasm`
/// larger than the Worker's upload budget had room for (BENCHMARKS.md,
/// "Size and start-up").
fn http_date(b: &[u8]) -> Option<f64> {
    if b.len() != 29 || b.get(3) != Some(&b',') || !b.ends_with(b" GMT") {
        return None;
    }
    let (day, month, year, time) = (5, 8, 12, 17);
    let digits = |at: usize, len: usize| -> Option<u32> {
        b.get(at..at + len)?.iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    const MONTHS: &[u8; 36] = b"JanFebMarAprMayJunJulAugSepOctNovDec";
    let name = b.get(month..month + 3)?;
    let month = MONTHS.chunks(3).position(|m| m == name)? as u32 + 1;
    let (day, year) = (digits(day, 2)?, digits(year, 4)?);
    let (h, mi, sec) = (digits(time, 2)?, digits(time + 3, 2)?, digits(time + 6, 2)?);
    if b.get(time + 2) != Some(&b':') || b.get(time + 5) != Some(&b':') || h > 23 || mi > 59 || sec > 60 || year < 1970
    {
        return None;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1];
    if day == 0 || day > days_in {
        return None;
    }
    // Days since 1970-01-01 (days-from-civil, with March-based years).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let (era, yoe) = (y / 400, y % 400);
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * m + 2) / 5 + day - 1;
    let days = f64::from(era) * 146_097.0 + f64::from(doe) - 719_468.0;
    Some(days * 86_400.0 + f64::from(h * 3_600 + mi * 60 + sec))
}

/// `1*DIGIT` (RFC 9110 delta-seconds), surrounding blanks allowed: the
/// seconds, saturating far past any deadline; `None` for anything else (a
/// sign, a fraction, letters, nothing).
fn delta_seconds(value: &str) -> Option<f64> {
    let v = blank_trimmed(value);
    if v.is_empty() {
        return None;
    }
    // Past 10^300 the sum stays finite (at most 10 × 10^300 + 9) and far past any deadline.
    v.iter().try_fold(0.0f64, |s, &b| {
        b.is_ascii_digit().then(|| if s > 1e300 { s } else { s * 10.0 + f64::from(b - b'0') })
    })
}

/// `value`'s bytes without the spaces and tabs around them (bytes, not
/// characters: no UTF-8 decoding in the `.wasm`).
fn blank_trimmed(value: &str) -> &[u8] {
    let mut b = value.as_bytes();
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: f64 = 1_796_000_000_000.0; // 2026-11-30T…Z, in ms

    fn ra(v: &str, wall: f64) -> ServerWait {
        server_wait(Some(v), None, None, wall)
    }

    #[test]
    fn delta_seconds_in_each_header() {
        assert_eq!(ra("30", f64::NAN), ServerWait::Ms(30_000.0));
        assert_eq!(ra(" 0 ", f64::NAN), ServerWait::Ms(0.0));
        assert_eq!(server_wait(None, Some("7"), None, f64::NAN), ServerWait::Ms(7_000.0));
        assert_eq!(server_wait(None, None, Some("12"), f64::NAN), ServerWait::Ms(12_000.0));
        assert_eq!(server_wait(None, None, None, f64::NAN), ServerWait::None);
    }

    #[test]
    fn an_http_date_needs_the_wall_clock_and_waits_until_it() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(ra(date, f64::NAN), ServerWait::NeedsWallClock);
        let at = 784_111_777_000.0;
        assert_eq!(ra(date, at - 2_500.0), ServerWait::Ms(2_500.0));
        assert_eq!(ra(date, at + 10.0), ServerWait::Ms(0.0), "a date already past waits nothing");
        // The two obsolete forms are not read (see `http_date`).
        assert_eq!(ra("Sunday, 06-Nov-94 08:49:37 GMT", at), ServerWait::None);
        assert_eq!(ra("Sun Nov  6 08:49:37 1994", at), ServerWait::None);
        // A leap day, and the day after the epoch's.
        assert_eq!(ra("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800_000.0 - 1.0), ServerWait::Ms(1.0));
        assert_eq!(ra("Fri, 02 Jan 1970 00:00:00 GMT", 0.0), ServerWait::Ms(86_400_000.0));
        for bad in [
            "Thu, 29 Feb 2023 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Wed, 31 Dec 1969 23:59:59 GMT",
        ] {
            assert_eq!(ra(bad, at), ServerWait::None, "{bad}");
        }
    }

    #[test]
    fn x_ratelimit_reset_above_1e9_is_an_epoch() {
        assert_eq!(server_wait(None, None, Some("1796000005"), f64::NAN), ServerWait::NeedsWallClock);
        assert_eq!(server_wait(None, None, Some("1796000005"), NOW), ServerWait::Ms(5_000.0));
        assert_eq!(
            server_wait(None, None, Some("1000000000"), f64::NAN),
            ServerWait::Ms(1e12),
            "10^9 itself is seconds"
        );
        assert_eq!(server_wait(None, None, Some("1795999990"), NOW), ServerWait::Ms(0.0), "past");
        // RateLimit-Reset is always seconds.
        assert_eq!(server_wait(None, Some("1796000005"), None, f64::NAN), ServerWait::Ms(1_796_000_005_000.0));
    }

    #[test]
    fn junk_and_negatives_are_ignored_and_the_next_header_counts() {
        for junk in ["", " ", "-5", "+5", "1.5", "1e3", "soon", "30s", "٣", "Sun, 31 Feb 2026 00:00:00 GMT", "\u{0}"] {
            assert_eq!(ra(junk, NOW), ServerWait::None, "{junk:?}");
            assert_eq!(server_wait(Some(junk), Some("3"), Some("9"), NOW), ServerWait::Ms(3_000.0), "{junk:?}");
            assert_eq!(server_wait(Some(junk), Some(junk), Some("9"), NOW), ServerWait::Ms(9_000.0), "{junk:?}");
        }
        assert_eq!(server_wait(Some("1"), Some("3"), Some("9"), NOW), ServerWait::Ms(1_000.0), "Retry-After first");
    }

    #[test]
    fn huge_values_saturate() {
        let huge = "9".repeat(400);
        assert_eq!(ra(&huge, f64::NAN), ServerWait::Ms(MAX_MS));
        assert_eq!(ra("18446744073709551616", f64::NAN), ServerWait::Ms(MAX_MS));
        assert_eq!(server_wait(None, None, Some(&huge), NOW), ServerWait::Ms(MAX_MS));
        assert_eq!(ra("Fri, 31 Dec 9999 23:59:59 GMT", 0.0), ServerWait::Ms(253_402_300_799_000.0));
    }

    proptest! {
        /// Invariants 1 and 2.
        #[test]
        fn never_panics_and_waits_are_finite(a in ".{0,40}", b in "[0-9 -]{0,25}", wall in prop_oneof![Just(f64::NAN), 0.0..4e12f64]) {
            for w in [server_wait(Some(&a), Some(&b), Some(&b), wall), server_wait(None, None, Some(&b), wall)] {
                if let ServerWait::Ms(ms) = w {
                    prop_assert!(ms.is_finite() && ms >= 0.0);
                }
            }
        }
    }
}
