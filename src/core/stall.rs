//! Stall detection: which of a stream's three limits expires next, and whether one has.
//!
//! # Why three limits and not one timeout
//! A streamed response has no single duration: it has a wait before the first
//! token, then a rhythm of gaps between tokens. Each means something
//! different, so each gets its own bound:
//!
//! - **first chunk** (`firstChunkMs`): the wait before the first progress
//!   chunk legitimately contains queueing and prefill, and prefill grows with
//!   the prompt. Seed 000's placeholder figures put p99 time-to-first-token at
//!   2.4 s for short prompts and 9.1 s for 30 000-token prompts, which doubles
//!   to limits of about 5 s and 18 s. No later gap contains that work.
//! - **stall** (`stallMs`): the longest silence tolerated *between* progress
//!   chunks. A stream that keeps producing is healthy however long it runs;
//!   one that has gone quiet is dead however recently it started. Gaps are
//!   scheduler noise with a heavy tail, hence a larger multiple of their p99
//!   (1.8 s × 5 = 9 s in seed 000's example).
//! - **deadline** (optional, an absolute instant): the whole operation stops
//!   being worth anything at some point, whatever the stream is doing (seed
//!   004). It also caps occupancy: by Little's law, the in-flight count is
//!   the arrival rate times how long each stream may stay.
//!
//! A single overall timeout gets both stream cases backwards: it kills a
//! 60-second healthy generation and waits out a stream that went silent after
//! 2 seconds. Aborting before the first token is cheap and invisible to the
//! user; after it, the tokens are spent and the failure shows. So the first
//! limit can be aggressive and the total one patient.
//!
//! # How the host drives it (lazy re-arm)
//! The per-chunk path stays in JavaScript and never calls this module: it
//! records `lastProgressAt` and the counts, nothing else. The host keeps one
//! timer, armed for the [`Decision::Wake`] instant, and calls
//! [`StallConfig::decide`] only when that timer fires. A chunk never re-arms
//! the timer: when progress has happened since arming, the timer fires before
//! the true expiry and `decide` answers with the next wake instead of a stall.
//!
//! That only works if the armed wake is never *later* than an expiry the host
//! could still cause by recording progress. Progress postpones the stall
//! expiry, with one exception: the first progress chunk swaps `firstChunkMs`
//! for `stallMs`, which brings the expiry forward when the first-chunk limit
//! is the more generous one (seed 000's 30 000-token case: 18 s then 9 s).
//! So while no progress is recorded, the wake is also capped at `now +
//! stallMs`, the earliest a stall could expire if the first chunk arrived
//! right now; that wake reports [`Phase::Stall`]. The cost: at most
//! ⌈`firstChunkMs` / `stallMs`⌉ wakes before the first chunk (none when
//! `stallMs ≥ firstChunkMs`), one extra wake per progress chunk for streams
//! that then fall silent for a whole limit, and zero timer work per chunk.
//!
//! # Defined outcomes
//! - The active limit is `firstChunkMs` from `startedAt` while no progress has
//!   been recorded, then `stallMs` from `lastProgressAt`.
//! - The limit that expires first decides. A stall is due once `now − ref ≥
//!   limit`; the deadline once `now ≥ deadline`.
//! - At a tie, and whenever `stallMs` (or `firstChunkMs`) reaches past the
//!   deadline, the deadline wins: the answer is
//!   [`Decision::DeadlineExceeded`], never a stall. A limit longer than the
//!   time left is accepted, not an error: a deadline often shrinks below the
//!   configured limits late in a pipeline, and that is not a mistake.
//! - A timer that fires late does not change the verdict: when both the stall
//!   and the deadline have passed, the one that expired first is reported, so
//!   the outcome depends on the stream, not on event-loop lag. `after_ms` and
//!   `late_by_ms` are measured at `now`, so they include the lag.
//! - Time going backwards (`now` before `startedAt` or `lastProgressAt`, as
//!   from two clock readings taken in the "wrong" order) is not an error: the
//!   limit simply has not elapsed, and the wake is computed from the absolute
//!   expiry, so it is later than `now` and no output is negative.
//! - A wake further away than [`MAX_TIMER_MS`] gets a maximal timer; when it
//!   fires, `decide` plans the next one.
//!
//! # Invariants (each is a property or simulation test in this module)
//! 1. `decide` never panics. Every number it returns is finite, `≥ 0` and not
//!    `-0`; every rejected input is an error naming its parameter.
//! 2. No stall before its limit: `Stalled { FirstChunk }` only without
//!    progress and with `after_ms = now − startedAt ≥ firstChunkMs`;
//!    `Stalled { Stall }` only after progress and with
//!    `after_ms = now − lastProgressAt ≥ stallMs`; `DeadlineExceeded` only with
//!    `late_by_ms = now − deadline ≥ 0`.
//! 3. No missed expiry: `Wake` means nothing has expired (`now < at_ms`), and
//!    nothing can expire before `at_ms` whatever the host records next:
//!    progress at any instant in `[now, at_ms)`, or none, still gives a `Wake`
//!    just before `at_ms`. With no new progress, consulting at `at_ms` gives the
//!    verdict for `phase`, or, for the guard wake before the first chunk, the
//!    next wake.
//! 4. Verdicts do not depend on timer lag: for one snapshot, once a consult
//!    gives a verdict, every later one gives the same verdict and phase (the
//!    first limit to expire; the deadline at a tie).
//! 5. The timer is never early and never needlessly late: `delay_ms` is a
//!    whole number in `1 ..= MAX_TIMER_MS`, `now + delay_ms ≥ at_ms`, and one
//!    millisecond less would be early, unless the delay was capped at
//!    [`MAX_TIMER_MS`] (then `at_ms − now > MAX_TIMER_MS`).
//! 6. The deadline wins ties and limits reaching past it: when
//!    `deadline ≤` the active limit's expiry, the answer is never `Stalled`.
//! 7. Simulation: a fake clock drives the host's loop (one timer, re-armed
//!    only when it fires, chunks never calling the core) through random chunk
//!    arrivals. With exact timers its verdict, instant, phase, `after_ms` and
//!    counts equal a brute-force oracle that checks every millisecond, using
//!    at most 1 + (progress chunks) + ⌈`firstChunkMs` / `stallMs`⌉ calls; with
//!    timers jittered by −1..+3 ms it never declares anything the oracle has
//!    not, nor before it.

use core::fmt;

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS, MAX_TIMER_MS};

/// Which limit a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `firstChunkMs`, counted from `startedAt`, while no progress is recorded.
    FirstChunk,
    /// `stallMs`, counted from `lastProgressAt`.
    Stall,
    /// The stream's deadline instant.
    Deadline,
}

impl Phase {
    /// The name the JavaScript API uses: `"first-chunk"`, `"stall"` or `"deadline"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FirstChunk => "first-chunk",
            Self::Stall => "stall",
            Self::Deadline => "deadline",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a stall configuration or snapshot was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StallError {
    /// `stallMs` was NaN, ±∞, zero, negative or past [`MAX_MS`]. The gap
    /// limit is a positive, finite number of milliseconds: it is a property of
    /// the source's rhythm, not a share of a budget, and zero would call every
    /// gap a stall. For "no practical limit", pass a large value and let the
    /// deadline bound the stream.
    Limit { param: &'static str, value: f64 },
    /// A wait (`firstChunkMs`, or `firstByteMs` for headers) was NaN, ±∞,
    /// negative or past [`MAX_MS`]. Zero is accepted: a wait is often cut from
    /// what is left of a deadline, and nothing left means the wait has already
    /// run out (the stream stalls at once), not that the caller erred.
    Wait { param: &'static str, value: f64 },
    /// An instant (`deadline`, `startedAt`, `lastProgressAt` or `nowMs`) was
    /// outside `0 ..= MAX_MS`. Pass readings of one monotonic clock
    /// (`performance.now()`).
    Instant(DeadlineError),
    /// `param` (`chunks` or `bytes`) was not a whole number in
    /// `0 ..= MAX_MS`. Pass the counts the stream wrapper kept.
    Count { param: &'static str, value: f64 },
}

impl StallError {
    /// The parameter at fault. Every stall error is caused by one input.
    pub fn param(&self) -> &'static str {
        match self {
            Self::Limit { param, .. } | Self::Wait { param, .. } | Self::Count { param, .. } => param,
            // `check_ms` only produces the input variants, which all name one.
            Self::Instant(e) => e.param().unwrap_or("nowMs"),
        }
    }
}

impl fmt::Display for StallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Limit { param, value } => write!(
                f,
                "'{param}' must be a finite number of milliseconds greater than 0 and at most {MAX_MS}: \
                 current value is {value}"
            ),
            Self::Wait { param, value } => write!(
                f,
                "'{param}' must be a finite number of milliseconds, 0 or more and at most {MAX_MS} \
                 (0: the wait has already run out): current value is {value}"
            ),
            Self::Instant(e) => e.fmt(f),
            Self::Count { param, value } => {
                write!(f, "'{param}' must be a whole number between 0 and {MAX_MS}: current value is {value}")
            }
        }
    }
}

impl std::error::Error for StallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Instant(e) => Some(e),
            Self::Limit { .. } | Self::Wait { .. } | Self::Count { .. } => None,
        }
    }
}

/// The validated limits of one stream. Build it once when the stream is
/// wrapped; it is `Copy` and holds no state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StallConfig {
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
}

/// What the host has recorded about the stream so far. Plain data: the host
/// writes it without calling the core, and [`StallConfig::decide`] validates it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// When the stream was wrapped (the first-chunk limit counts from here).
    pub started_at: f64,
    /// When the latest progress chunk arrived; `None` before the first one.
    pub last_progress_at: Option<f64>,
    /// Chunks seen so far. Not interpreted, only reported with a stall.
    pub chunks: f64,
    /// Bytes seen so far. Not interpreted, only reported with a stall.
    pub bytes: f64,
}

impl Snapshot {
    /// A stream wrapped at `at` that has produced nothing yet.
    pub const fn started(at: f64) -> Self {
        Self { started_at: at, last_progress_at: None, chunks: 0.0, bytes: 0.0 }
    }
}

/// The answer to "the timer fired at `now`: what now?".
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Nothing has expired. Arm one timer for `delay_ms` and consult again
    /// when it fires. `at_ms` is the earliest instant any limit could expire,
    /// whatever progress the host records meanwhile, and `phase` the limit
    /// that would: the deadline, the first-chunk limit, or the stall limit
    /// (after progress; or, before the first chunk, the guard `now + stallMs`
    /// for a first chunk arriving right now). `delay_ms` is shorter than
    /// `at_ms − now` only when capped at [`MAX_TIMER_MS`].
    Wake { at_ms: f64, delay_ms: f64, phase: Phase },
    /// The stream stalled. `phase` is [`Phase::FirstChunk`] or [`Phase::Stall`];
    /// `after_ms` is the silence observed at `now` (from `startedAt`, or from
    /// `lastProgressAt`); `chunks` and `bytes` echo the snapshot for the error.
    Stalled { phase: Phase, after_ms: f64, chunks: f64, bytes: f64 },
    /// The deadline passed `late_by_ms` before `now`.
    DeadlineExceeded { late_by_ms: f64 },
}

impl Decision {
    /// `true` for a verdict (stall or deadline): the host aborts the upstream.
    pub const fn is_final(&self) -> bool {
        !matches!(self, Self::Wake { .. })
    }
}

impl StallConfig {
    /// Validates the limits (`firstChunkMs`: `0 ..= MAX_MS`, where 0 stalls at
    /// once; `stallMs`: `0 < ms ≤ MAX_MS`) and the optional deadline instant
    /// (`deadline`: `0 ..= MAX_MS`).
    ///
    /// A limit longer than the time left to the deadline is accepted; the
    /// deadline then decides (see the module's *Defined outcomes*).
    pub fn new(first_chunk_ms: f64, stall_ms: f64, deadline_at: Option<f64>) -> Result<Self, StallError> {
        let first_chunk_ms = check_wait("firstChunkMs", first_chunk_ms)?;
        let stall_ms = check_limit("stallMs", stall_ms)?;
        let deadline_at = match deadline_at {
            Some(at) => Some(check_ms("deadline", at).map_err(StallError::Instant)?),
            None => None,
        };
        Ok(Self { first_chunk_ms, stall_ms, deadline_at })
    }

    /// The limit before the first progress chunk, in ms.
    pub const fn first_chunk_ms(&self) -> f64 {
        self.first_chunk_ms
    }

    /// The limit on the gap between progress chunks, in ms.
    pub const fn stall_ms(&self) -> f64 {
        self.stall_ms
    }

    /// The deadline instant, if the stream has one.
    pub const fn deadline_at(&self) -> Option<f64> {
        self.deadline_at
    }

    /// Decides, at `now_ms`, whether the stream described by `snapshot` has
    /// stalled or run out of time, and if not, when to look again.
    pub fn decide(&self, snapshot: &Snapshot, now_ms: f64) -> Result<Decision, StallError> {
        let now = check_ms("nowMs", now_ms).map_err(StallError::Instant)?;
        let started = check_ms("startedAt", snapshot.started_at).map_err(StallError::Instant)?;
        let last = match snapshot.last_progress_at {
            Some(at) => Some(check_ms("lastProgressAt", at).map_err(StallError::Instant)?),
            None => None,
        };
        let chunks = check_count("chunks", snapshot.chunks)?;
        let bytes = check_count("bytes", snapshot.bytes)?;

        let (phase, reference, limit) = match last {
            None => (Phase::FirstChunk, started, self.first_chunk_ms),
            Some(at) => (Phase::Stall, at, self.stall_ms),
        };
        let limit_at = expiry(reference, limit);
        // The deadline wins a tie (`<=`), and so wins whenever a limit reaches past it.
        let (phase, at) = match self.deadline_at {
            Some(deadline) if deadline <= limit_at => (Phase::Deadline, deadline),
            _ => (phase, limit_at),
        };

        if now < at {
            // Progress only postpones a stall, except the first progress chunk:
            // it swaps `firstChunkMs` for `stallMs`, which can bring the expiry
            // forward. Until it arrives, also wake when a stall would expire if
            // it arrived right now, so the one armed timer is never late.
            let (phase, at) = match last {
                None => match expiry(now, self.stall_ms) {
                    guard if guard < at => (Phase::Stall, guard),
                    _ => (phase, at),
                },
                Some(_) => (phase, at),
            };
            return Ok(Decision::Wake { at_ms: at, delay_ms: timer_delay(at, now), phase });
        }
        // `now >= at` and `at - reference >= limit` (see `expiry`), so both
        // differences are at least their bound: never negative. `+ 0.0` clears `-0`.
        Ok(match phase {
            Phase::Deadline => Decision::DeadlineExceeded { late_by_ms: (now - at) + 0.0 },
            Phase::FirstChunk | Phase::Stall => {
                Decision::Stalled { phase, after_ms: (now - reference) + 0.0, chunks, bytes }
            }
        })
    }
}

/// A limit: finite, `0 < ms ≤ MAX_MS`.
fn check_limit(param: &'static str, value: f64) -> Result<f64, StallError> {
    match check_ms(param, value) {
        Ok(ms) if ms > 0.0 => Ok(ms),
        _ => Err(StallError::Limit { param, value }),
    }
}

/// A wait: finite, `0 ≤ ms ≤ MAX_MS`; `-0` becomes `0`.
fn check_wait(param: &'static str, value: f64) -> Result<f64, StallError> {
    check_ms(param, value).map_err(|_| StallError::Wait { param, value })
}

/// A count: a whole number in `0 ..= MAX_MS`; `-0` becomes `0`.
fn check_count(param: &'static str, value: f64) -> Result<f64, StallError> {
    match check_ms(param, value) {
        Ok(n) if n.fract() == 0.0 => Ok(n),
        _ => Err(StallError::Count { param, value }),
    }
}

/// The first instant at which `limit` has elapsed since `reference`, in f64.
///
/// `reference + limit` can round one ulp below the true sum; at that instant
/// `now - reference` would still be `< limit`. Stepping up one ulp (always
/// enough: the next float is at or past the true sum) keeps "`now >= at`" and
/// "`now - reference >= limit`" the same test, so a stall's `after_ms` is
/// never below its limit.
fn expiry(reference: f64, limit: f64) -> f64 {
    let at = reference + limit;
    if at - reference < limit {
        // `at` is positive and at most 2 × MAX_MS: the next bit pattern is the next float up.
        f64::from_bits(at.to_bits() + 1)
    } else {
        at
    }
}

/// The smallest whole delay that does not fire before `at`, capped at
/// [`MAX_TIMER_MS`]. Requires `now < at`.
fn timer_delay(at: f64, now: f64) -> f64 {
    // `now < at` makes the gap positive (no underflow to 0 with subnormals), so `c >= 1`.
    let c = (at - now).ceil();
    // The subtraction and the host's `now + delay` both round; check the
    // neighbours of `c` against the same f64 comparison `decide` uses.
    let delay = if c > 1.0 && now + (c - 1.0) >= at {
        c - 1.0
    } else if now + c >= at {
        c
    } else {
        c + 1.0
    };
    if delay > MAX_TIMER_MS {
        MAX_TIMER_MS
    } else {
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::deadline::any_f64;
    use proptest::prelude::*;

    /// Plausible instants and limits: fractional, clustered, sometimes huge.
    fn time() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => 0.0..1e4f64,
            2 => (0u32..10_000).prop_map(f64::from),
            1 => 0.0..1e12f64,
            1 => Just(MAX_MS),
            1 => (MAX_MS - 1e10)..MAX_MS,
        ]
    }

    fn limit() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => 0.001..1e4f64,
            2 => (1u32..10_000).prop_map(f64::from),
            1 => Just(MAX_TIMER_MS + 0.5),
            1 => 1e10..MAX_MS,
        ]
    }

    /// A wait may also be zero (it has run out).
    fn wait() -> impl Strategy<Value = f64> {
        prop_oneof![8 => limit(), 1 => Just(0.0)]
    }

    fn config() -> impl Strategy<Value = StallConfig> {
        (wait(), limit(), proptest::option::of(time())).prop_map(|(f, s, d)| StallConfig::new(f, s, d).unwrap())
    }

    fn snapshot() -> impl Strategy<Value = Snapshot> {
        (time(), proptest::option::of(time()), 0u32..1000, 0u32..100_000).prop_map(|(s, l, c, b)| Snapshot {
            started_at: s,
            last_progress_at: l,
            chunks: f64::from(c),
            bytes: f64::from(b),
        })
    }

    fn clean(v: f64) -> bool {
        v.is_finite() && v >= 0.0 && v.to_bits() != (-0.0f64).to_bits()
    }

    fn cfg(first: f64, stall: f64, deadline: Option<f64>) -> StallConfig {
        StallConfig::new(first, stall, deadline).unwrap()
    }

    fn progress(started: f64, last: f64, chunks: f64, bytes: f64) -> Snapshot {
        Snapshot { started_at: started, last_progress_at: Some(last), chunks, bytes }
    }

    #[test]
    fn seed_000_healthy_long_stream_and_dead_short_one() {
        // Seed 000's limits for a short prompt: 5 s to the first chunk, 9 s between chunks.
        let c = cfg(5_000.0, 9_000.0, None);
        // 60 s of steady output, a chunk per second: healthy, next look 9 s after the last one.
        let s = progress(0.0, 60_000.0, 60.0, 960.0);
        assert_eq!(
            c.decide(&s, 60_500.0),
            Ok(Decision::Wake { at_ms: 69_000.0, delay_ms: 8_500.0, phase: Phase::Stall })
        );
        // Started 2 s ago, one chunk, then silence: dead at 9 s of silence, not at some total.
        let s = progress(0.0, 2_000.0, 1.0, 16.0);
        assert!(!c.decide(&s, 10_999.0).unwrap().is_final());
        assert_eq!(
            c.decide(&s, 11_000.0),
            Ok(Decision::Stalled { phase: Phase::Stall, after_ms: 9_000.0, chunks: 1.0, bytes: 16.0 })
        );
        // Nothing at all: the first-chunk limit applies, measured from the start.
        let s = Snapshot::started(100.0);
        assert_eq!(
            c.decide(&s, 100.0),
            Ok(Decision::Wake { at_ms: 5_100.0, delay_ms: 5_000.0, phase: Phase::FirstChunk })
        );
        assert_eq!(
            c.decide(&s, 5_112.5),
            Ok(Decision::Stalled { phase: Phase::FirstChunk, after_ms: 5_012.5, chunks: 0.0, bytes: 0.0 })
        );
    }

    #[test]
    fn a_zero_first_chunk_wait_has_run_out_at_once() {
        for zero in [0.0, -0.0] {
            let c = cfg(zero, 100.0, None);
            assert_eq!(c.first_chunk_ms().to_bits(), 0.0f64.to_bits());
            assert_eq!(
                c.decide(&Snapshot::started(40.0), 40.0),
                Ok(Decision::Stalled { phase: Phase::FirstChunk, after_ms: 0.0, chunks: 0.0, bytes: 0.0 })
            );
        }
        // The deadline still wins a tie.
        let c = cfg(0.0, 100.0, Some(40.0));
        assert_eq!(c.decide(&Snapshot::started(40.0), 40.0), Ok(Decision::DeadlineExceeded { late_by_ms: 0.0 }));
        // After progress the wait no longer matters.
        let s = Snapshot { started_at: 0.0, last_progress_at: Some(10.0), chunks: 1.0, bytes: 1.0 };
        assert_eq!(
            cfg(0.0, 100.0, None).decide(&s, 50.0),
            Ok(Decision::Wake { at_ms: 110.0, delay_ms: 60.0, phase: Phase::Stall })
        );
    }

    #[test]
    fn rejects_each_bad_limit_by_name() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, MAX_MS + 2.0] {
            let e = StallConfig::new(bad, 1.0, None).unwrap_err();
            assert_eq!(e.param(), "firstChunkMs");
            assert!(matches!(e, StallError::Wait { .. }), "{e:?}");
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 0.0, -0.0, MAX_MS + 2.0] {
            let e = StallConfig::new(1.0, bad, None).unwrap_err();
            assert_eq!(e.param(), "stallMs");
            assert!(matches!(e, StallError::Limit { .. }), "{e:?}");
        }
        assert_eq!(
            StallConfig::new(-1.0, 1.0, None).unwrap_err().to_string(),
            "'firstChunkMs' must be a finite number of milliseconds, 0 or more and at most 9007199254740991 \
             (0: the wait has already run out): current value is -1"
        );
        let msg = StallConfig::new(1.0, 0.0, None).unwrap_err().to_string();
        assert_eq!(
            msg,
            "'stallMs' must be a finite number of milliseconds greater than 0 and at most 9007199254740991: \
             current value is 0"
        );
        let e = StallConfig::new(1.0, 1.0, Some(f64::NAN)).unwrap_err();
        assert!(matches!(e, StallError::Instant(DeadlineError::NotFinite { param: "deadline", .. })));
        assert!(StallConfig::new(1.0, 1.0, Some(-0.0)).is_ok());
        assert!(StallConfig::new(MAX_MS, MAX_MS, Some(MAX_MS)).is_ok());
    }

    #[test]
    fn rejects_each_bad_snapshot_field_by_name() {
        let c = cfg(10.0, 10.0, None);
        let ok = Snapshot { started_at: 0.0, last_progress_at: Some(1.0), chunks: 1.0, bytes: 3.0 };
        let cases: [(Snapshot, f64, &str); 6] = [
            (Snapshot { started_at: -1.0, ..ok }, 0.0, "startedAt"),
            (Snapshot { last_progress_at: Some(f64::NAN), ..ok }, 0.0, "lastProgressAt"),
            (Snapshot { chunks: 1.5, ..ok }, 0.0, "chunks"),
            (Snapshot { chunks: -1.0, ..ok }, 0.0, "chunks"),
            (Snapshot { bytes: f64::INFINITY, ..ok }, 0.0, "bytes"),
            (ok, f64::NEG_INFINITY, "nowMs"),
        ];
        for (s, now, param) in cases {
            let e = c.decide(&s, now).unwrap_err();
            assert_eq!(e.param(), param, "{e}");
            assert!(e.to_string().contains(&format!("'{param}'")), "{e}");
        }
        assert_eq!(
            c.decide(&Snapshot { chunks: 2.5, ..ok }, 0.0).unwrap_err().to_string(),
            "'chunks' must be a whole number between 0 and 9007199254740991: current value is 2.5"
        );
    }

    #[test]
    fn stall_longer_than_the_deadline_lets_the_deadline_decide() {
        let c = cfg(50.0, 1_000.0, Some(300.0));
        let s = progress(0.0, 100.0, 4.0, 40.0);
        assert_eq!(c.decide(&s, 120.0), Ok(Decision::Wake { at_ms: 300.0, delay_ms: 180.0, phase: Phase::Deadline }));
        assert_eq!(c.decide(&s, 300.0), Ok(Decision::DeadlineExceeded { late_by_ms: 0.0 }));
        assert_eq!(c.decide(&s, 5_000.0), Ok(Decision::DeadlineExceeded { late_by_ms: 4_700.0 }));
        // A tie goes to the deadline too.
        let c = cfg(50.0, 200.0, Some(300.0));
        assert_eq!(c.decide(&s, 300.0), Ok(Decision::DeadlineExceeded { late_by_ms: 0.0 }));
        // A deadline that already passed before the stream started.
        let c = cfg(50.0, 200.0, Some(0.0));
        assert_eq!(c.decide(&Snapshot::started(10.0), 10.0), Ok(Decision::DeadlineExceeded { late_by_ms: 10.0 }));
    }

    #[test]
    fn a_late_timer_reports_the_limit_that_expired_first() {
        let c = cfg(50.0, 100.0, Some(1_000.0));
        let s = progress(0.0, 400.0, 2.0, 2.0);
        // The stall expired at 500; the timer only ran at 1 200, past the deadline.
        assert_eq!(
            c.decide(&s, 1_200.0),
            Ok(Decision::Stalled { phase: Phase::Stall, after_ms: 800.0, chunks: 2.0, bytes: 2.0 })
        );
    }

    #[test]
    fn time_going_backwards_is_not_an_error() {
        let c = cfg(100.0, 40.0, None);
        // `now` before the last progress chunk: wake at the absolute expiry.
        let s = progress(0.0, 500.0, 3.0, 9.0);
        assert_eq!(c.decide(&s, 480.0), Ok(Decision::Wake { at_ms: 540.0, delay_ms: 60.0, phase: Phase::Stall }));
        // `now` before the start: the first-chunk limit expires at 600, but a
        // first chunk arriving now could stall as early as 40.
        assert_eq!(
            c.decide(&Snapshot::started(500.0), 0.0),
            Ok(Decision::Wake { at_ms: 40.0, delay_ms: 40.0, phase: Phase::Stall })
        );
        let c = cfg(100.0, 700.0, None);
        assert_eq!(
            c.decide(&Snapshot::started(500.0), 0.0),
            Ok(Decision::Wake { at_ms: 600.0, delay_ms: 600.0, phase: Phase::FirstChunk })
        );
        let c = cfg(100.0, 40.0, None);
        // Progress recorded before the start: the stall limit counts from it.
        let s = progress(500.0, 450.0, 1.0, 1.0);
        assert_eq!(
            c.decide(&s, 490.0),
            Ok(Decision::Stalled { phase: Phase::Stall, after_ms: 40.0, chunks: 1.0, bytes: 1.0 })
        );
    }

    #[test]
    fn the_first_progress_chunk_switches_limits() {
        // A generous first-chunk limit, a tight stall limit: the first chunk
        // ends the first-chunk phase, so the silence after it is judged by `stallMs`.
        let c = cfg(10_000.0, 100.0, None);
        assert!(!c.decide(&Snapshot::started(0.0), 500.0).unwrap().is_final());
        assert_eq!(
            c.decide(&progress(0.0, 300.0, 1.0, 5.0), 500.0),
            Ok(Decision::Stalled { phase: Phase::Stall, after_ms: 200.0, chunks: 1.0, bytes: 5.0 })
        );
    }

    #[test]
    fn waits_for_the_first_chunk_with_a_guard_when_the_stall_limit_is_shorter() {
        // Seed 000's long-prompt limits: 18 s to the first chunk, 9 s between chunks.
        let c = cfg(18_000.0, 9_000.0, None);
        let quiet = Snapshot::started(0.0);
        // Armed at the start for 18 s, the timer would be late for a first chunk
        // at 1 s followed by silence (stall due at 10 s). So the wake is at 9 s.
        let guard = Decision::Wake { at_ms: 9_000.0, delay_ms: 9_000.0, phase: Phase::Stall };
        assert_eq!(c.decide(&quiet, 0.0), Ok(guard));
        let one = progress(0.0, 1_000.0, 1.0, 12.0);
        let next = Decision::Wake { at_ms: 10_000.0, delay_ms: 1_000.0, phase: Phase::Stall };
        assert_eq!(c.decide(&one, 9_000.0), Ok(next));
        assert!(matches!(c.decide(&one, 10_000.0), Ok(Decision::Stalled { phase: Phase::Stall, .. })));
        // Still nothing at 9 s: the next wake is the first-chunk expiry itself.
        assert_eq!(
            c.decide(&quiet, 9_000.0),
            Ok(Decision::Wake { at_ms: 18_000.0, delay_ms: 9_000.0, phase: Phase::FirstChunk })
        );
        // With `stallMs ≥ firstChunkMs` there is no guard wake.
        let c = cfg(5_000.0, 9_000.0, None);
        assert_eq!(
            c.decide(&quiet, 0.0),
            Ok(Decision::Wake { at_ms: 5_000.0, delay_ms: 5_000.0, phase: Phase::FirstChunk })
        );
    }

    #[test]
    fn one_ulp_boundaries() {
        // 12.345 + 0.1 rounds to 12.445, and 12.445 − 12.345 < 0.1 in f64.
        let (start, limit) = (12.345, 0.1);
        assert!((start + limit) - start < limit);
        let c = cfg(limit, 1.0, None);
        let Ok(Decision::Wake { at_ms, delay_ms, .. }) = c.decide(&Snapshot::started(start), start) else {
            panic!("expected a wake");
        };
        assert!(at_ms > start + limit && at_ms - start >= limit);
        assert_eq!(delay_ms, 1.0);
        assert!(!c.decide(&Snapshot::started(start), start + limit).unwrap().is_final());
        match c.decide(&Snapshot::started(start), at_ms) {
            Ok(Decision::Stalled { after_ms, .. }) => assert!(after_ms >= limit),
            other => panic!("{other:?}"),
        }
        // A gap that is an exact integer needs exactly that delay; a hair more needs one more ms.
        assert_eq!(timer_delay(105.0, 100.0), 5.0);
        assert_eq!(timer_delay(105.000_000_1, 100.0), 6.0);
        assert_eq!(timer_delay(100.000_000_000_1, 100.0), 1.0);
        // Around the cap: a gap just under it fits exactly; just over it is capped.
        assert_eq!(timer_delay(MAX_TIMER_MS - 0.5, 0.0), MAX_TIMER_MS);
        assert_eq!(timer_delay(MAX_TIMER_MS + 0.5, 0.0), MAX_TIMER_MS);
    }

    #[test]
    fn long_limits_are_rearmed_not_truncated() {
        let c = cfg(3.0 * MAX_TIMER_MS + 5.5, MAX_MS, None);
        let s = Snapshot::started(0.25);
        let mut now = 0.25;
        let mut wakes = 0;
        let verdict = loop {
            match c.decide(&s, now).unwrap() {
                Decision::Wake { delay_ms, at_ms, .. } => {
                    assert!((1.0..=MAX_TIMER_MS).contains(&delay_ms));
                    assert_eq!(at_ms, 0.25 + 3.0 * MAX_TIMER_MS + 5.5);
                    now += delay_ms;
                    wakes += 1;
                }
                d => break d,
            }
        };
        assert_eq!(wakes, 4);
        assert!(matches!(
            verdict,
            Decision::Stalled { phase: Phase::FirstChunk, after_ms, .. } if after_ms == 3.0 * MAX_TIMER_MS + 6.0
        ));
    }

    #[test]
    fn phase_names_match_the_js_api() {
        assert_eq!(Phase::FirstChunk.to_string(), "first-chunk");
        assert_eq!(Phase::Stall.as_str(), "stall");
        assert_eq!(Phase::Deadline.as_str(), "deadline");
    }

    // ---- Invariants 1–6 -------------------------------------------------------------------

    /// Checks invariants 2, 3, 5 and 6 for one answer; returns the verdict's phase if final.
    fn check_decision(c: &StallConfig, s: &Snapshot, now: f64, d: Decision) -> Result<(), TestCaseError> {
        let (reference, limit) = match s.last_progress_at {
            None => (s.started_at, c.first_chunk_ms()),
            Some(at) => (at, c.stall_ms()),
        };
        let limit_at = expiry(reference, limit);
        match d {
            Decision::Stalled { phase, after_ms, chunks, bytes } => {
                prop_assert_eq!(phase, if s.last_progress_at.is_none() { Phase::FirstChunk } else { Phase::Stall });
                prop_assert!(clean(after_ms) && after_ms >= limit, "after {after_ms} < limit {limit}");
                prop_assert_eq!(after_ms, now - reference);
                prop_assert_eq!((chunks, bytes), (s.chunks, s.bytes));
                if let Some(deadline) = c.deadline_at() {
                    prop_assert!(deadline > limit_at, "stall reported although the deadline came first");
                }
            }
            Decision::DeadlineExceeded { late_by_ms } => {
                let deadline = c.deadline_at().expect("deadline verdict without a deadline");
                prop_assert!(clean(late_by_ms));
                prop_assert_eq!(late_by_ms, now - deadline);
                prop_assert!(deadline <= limit_at);
            }
            Decision::Wake { at_ms, delay_ms, phase } => {
                prop_assert!(clean(at_ms) && now < at_ms);
                prop_assert!(now - reference < limit || now < reference, "limit elapsed but still waiting");
                let mut want = match c.deadline_at() {
                    Some(deadline) if deadline <= limit_at => (Phase::Deadline, deadline),
                    _ => (if s.last_progress_at.is_none() { Phase::FirstChunk } else { Phase::Stall }, limit_at),
                };
                if s.last_progress_at.is_none() && expiry(now, c.stall_ms()) < want.1 {
                    want = (Phase::Stall, expiry(now, c.stall_ms()));
                }
                prop_assert_eq!((phase, at_ms), want);
                prop_assert!(clean(delay_ms) && delay_ms.fract() == 0.0 && (1.0..=MAX_TIMER_MS).contains(&delay_ms));
                if now + delay_ms >= at_ms {
                    prop_assert!(now + delay_ms >= at_ms, "timer early: {now} + {delay_ms} < {at_ms}");
                    if at_ms <= MAX_MS {
                        prop_assert!(delay_ms == 1.0 || now + (delay_ms - 1.0) < at_ms, "delay {delay_ms} not minimal");
                    }
                } else {
                    prop_assert!(delay_ms == MAX_TIMER_MS && at_ms - now > MAX_TIMER_MS);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Invariant 1: garbage in, errors naming a parameter out, never a panic or a bad number.
        #[test]
        fn total_on_any_input(
            f in any_f64(), st in any_f64(), d in proptest::option::of(any_f64()),
            start in any_f64(), last in proptest::option::of(any_f64()),
            chunks in any_f64(), bytes in any_f64(), now in any_f64(),
        ) {
            match StallConfig::new(f, st, d) {
                Err(e) => prop_assert!(["firstChunkMs", "stallMs", "deadline"].contains(&e.param())),
                Ok(c) => {
                    let s = Snapshot { started_at: start, last_progress_at: last, chunks, bytes };
                    match c.decide(&s, now) {
                        Err(e) => prop_assert!(
                            ["nowMs", "startedAt", "lastProgressAt", "chunks", "bytes"].contains(&e.param()), "{e}"
                        ),
                        Ok(dec) => check_decision(&c, &s, now, dec)?,
                    }
                }
            }
        }

        /// Invariants 2, 3, 5, 6 on plausible inputs.
        #[test]
        fn decisions_are_sound(c in config(), s in snapshot(), now in time()) {
            let d = c.decide(&s, now).unwrap();
            check_decision(&c, &s, now, d)?;
        }

        /// Invariant 3: whatever the host records after a wake was planned, nothing
        /// expires before it; with nothing recorded, the wake brings the verdict.
        #[test]
        fn no_expiry_before_the_wake(c in config(), s in snapshot(), now in time(), frac in 0.0..1.0f64) {
            if let Decision::Wake { at_ms, phase, .. } = c.decide(&s, now).unwrap() {
                // `at_ms > now >= 0`: the previous bit pattern is the float just below it.
                let just_before = f64::from_bits(at_ms.to_bits() - 1);
                // Progress at some instant from `now` on; hosts record it in order.
                let t1 = (now + (at_ms - now) * frac).min(just_before).max(s.last_progress_at.unwrap_or(0.0));
                let moved = Snapshot { last_progress_at: Some(t1), chunks: s.chunks + 1.0, ..s };
                if just_before <= MAX_MS {
                    for snap in [s, moved] {
                        if t1 <= just_before || snap.last_progress_at == s.last_progress_at {
                            let d = c.decide(&snap, just_before).unwrap();
                            prop_assert!(!d.is_final(), "{d:?} before the wake at {at_ms} ({snap:?})");
                        }
                    }
                }
                if at_ms <= MAX_MS {
                    match c.decide(&s, at_ms).unwrap() {
                        Decision::Stalled { phase: p, .. } => prop_assert_eq!(p, phase),
                        Decision::DeadlineExceeded { .. } => prop_assert_eq!(phase, Phase::Deadline),
                        Decision::Wake { at_ms: next, .. } => prop_assert!(
                            phase == Phase::Stall && s.last_progress_at.is_none() && next > at_ms,
                            "no verdict at the wake {at_ms} for {phase}"
                        ),
                    }
                }
            }
        }

        /// Invariant 4: a verdict, once reached, is the same however late the timer runs.
        #[test]
        fn verdicts_do_not_depend_on_lag(c in config(), s in snapshot(), now in time(), lag in 0.0..1e9f64) {
            let kind = |d: Decision| match d {
                Decision::Wake { .. } => None,
                Decision::Stalled { phase, .. } => Some(phase),
                Decision::DeadlineExceeded { .. } => Some(Phase::Deadline),
            };
            let first = kind(c.decide(&s, now).unwrap());
            if first.is_some() && now + lag <= MAX_MS {
                prop_assert_eq!(kind(c.decide(&s, now + lag).unwrap()), first);
            }
        }

        /// Invariant 6 directly: a stall limit reaching past the deadline never yields a stall.
        #[test]
        fn deadline_wins_over_longer_limits(
            start in 0.0..1e6f64, last in 0.0..1e6f64, left in 0.0..1e4f64, extra in 0.0..1e4f64, now in 0.0..2e6f64,
        ) {
            let deadline = last + left;
            let c = cfg(left + extra + 1.0, left + extra + 1e-3, Some(deadline));
            let s = progress(start, last, 1.0, 1.0);
            match c.decide(&s, now).unwrap() {
                Decision::Stalled { .. } => prop_assert!(false, "stall although the deadline comes first"),
                Decision::DeadlineExceeded { late_by_ms } => prop_assert_eq!(late_by_ms, now - deadline),
                Decision::Wake { phase, at_ms, .. } => prop_assert_eq!((phase, at_ms), (Phase::Deadline, deadline)),
            }
        }
    }

    // ---- Invariant 7: simulation against a brute-force oracle ----------------------------------

    #[derive(Debug, Clone, Copy)]
    struct Arrival {
        at: u64,
        progress: bool,
        bytes: u64,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Verdict {
        Stalled { phase: Phase, after_ms: u64, chunks: u64, bytes: u64 },
        Deadline { late_by_ms: u64 },
    }

    #[derive(Debug, Clone)]
    struct Sim {
        first: u64,
        stall: u64,
        deadline: Option<u64>,
        start: u64,
        arrivals: Vec<Arrival>,
    }

    impl Sim {
        fn horizon(&self) -> u64 {
            self.arrivals.last().map_or(self.start, |a| a.at) + self.first.max(self.stall) + 10
        }

        /// Checks every millisecond, in integers, without the core.
        fn oracle(&self) -> (u64, Verdict) {
            let (mut next, mut last, mut chunks, mut bytes) = (0, None, 0, 0);
            for t in self.start..=self.horizon() {
                while next < self.arrivals.len() && self.arrivals[next].at <= t {
                    let a = self.arrivals[next];
                    chunks += 1;
                    bytes += a.bytes;
                    if a.progress {
                        last = Some(a.at);
                    }
                    next += 1;
                }
                if let Some(d) = self.deadline {
                    if t >= d {
                        return (t, Verdict::Deadline { late_by_ms: t - d });
                    }
                }
                let (phase, reference, limit) = match last {
                    None => (Phase::FirstChunk, self.start, self.first),
                    Some(l) => (Phase::Stall, l, self.stall),
                };
                if t - reference >= limit {
                    return (t, Verdict::Stalled { phase, after_ms: t - reference, chunks, bytes });
                }
            }
            unreachable!("the oracle always reaches a verdict before the horizon")
        }

        /// The host's loop: one timer, fired at its instant plus `jitter()`, the core
        /// consulted only when it fires, chunks only recording a timestamp and counts.
        fn lazy(&self, mut jitter: impl FnMut() -> i64) -> (u64, Verdict, usize) {
            let c = cfg(self.first as f64, self.stall as f64, self.deadline.map(|d| d as f64));
            let mut snap = Snapshot::started(self.start as f64);
            let mut calls = 0;
            let mut consult = |snap: &Snapshot, t: u64| -> Result<u64, Verdict> {
                calls += 1;
                match c.decide(snap, t as f64).unwrap() {
                    Decision::Wake { delay_ms, .. } => {
                        let fire = (t as i64 + delay_ms as i64 + jitter()).max(t as i64 + 1);
                        Ok(fire as u64)
                    }
                    Decision::Stalled { phase, after_ms, chunks, bytes } => Err(Verdict::Stalled {
                        phase,
                        after_ms: after_ms as u64,
                        chunks: chunks as u64,
                        bytes: bytes as u64,
                    }),
                    Decision::DeadlineExceeded { late_by_ms } => {
                        Err(Verdict::Deadline { late_by_ms: late_by_ms as u64 })
                    }
                }
            };
            let mut timer = match consult(&snap, self.start) {
                Ok(at) => at,
                Err(v) => return (self.start, v, 1),
            };
            let mut next = 0;
            for t in self.start..=self.horizon() + 10 {
                while next < self.arrivals.len() && self.arrivals[next].at <= t {
                    let a = self.arrivals[next];
                    snap.chunks += 1.0;
                    snap.bytes += a.bytes as f64;
                    if a.progress {
                        snap.last_progress_at = Some(a.at as f64);
                    }
                    next += 1;
                }
                if t == timer {
                    match consult(&snap, t) {
                        Ok(at) => timer = at,
                        Err(v) => {
                            return (t, v, calls);
                        }
                    }
                }
            }
            unreachable!("the lazy loop always reaches a verdict")
        }
    }

    fn sim() -> impl Strategy<Value = Sim> {
        (
            1u64..200,
            1u64..120,
            proptest::option::of(0u64..1_500),
            0u64..50,
            proptest::collection::vec((0u64..150, proptest::bool::weighted(0.7), 0u64..64), 0..25),
        )
            .prop_map(|(first, stall, deadline, start, gaps)| {
                let mut at = start;
                let arrivals = gaps
                    .into_iter()
                    .map(|(gap, progress, bytes)| {
                        at += gap;
                        Arrival { at, progress, bytes }
                    })
                    .collect();
                Sim { first, stall, deadline: deadline.map(|d| start + d), start, arrivals }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn lazy_timer_matches_the_per_millisecond_oracle(s in sim()) {
            let (t_oracle, v_oracle) = s.oracle();
            let (t, v, calls) = s.lazy(|| 0);
            prop_assert_eq!((t, v), (t_oracle, v_oracle));
            let progress = s.arrivals.iter().filter(|a| a.progress).count();
            let guards = s.first.div_ceil(s.stall) as usize;
            prop_assert!(calls <= 1 + progress + guards, "{calls} calls for {progress} progress chunks");
        }

        #[test]
        fn jittered_timers_never_declare_early(s in sim(), seed in any::<u64>()) {
            let (t_oracle, _) = s.oracle();
            // A small xorshift: −1 ms (Node fires up to a millisecond early) to +3 ms late.
            let mut x = seed | 1;
            let (t, v, _) = s.lazy(|| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 5) as i64 - 1
            });
            prop_assert!(t >= t_oracle, "declared at {t}, before the first expiry at {t_oracle}");
            // What was declared is true at `t` with the state the stream had then.
            let upto = |p: bool| s.arrivals.iter().filter(move |a| a.at <= t && (a.progress || !p));
            let last = upto(true).map(|a| a.at).next_back();
            match v {
                Verdict::Deadline { late_by_ms } => prop_assert_eq!(Some(t - late_by_ms), s.deadline),
                Verdict::Stalled { phase, after_ms, chunks, bytes } => {
                    let (want, reference, limit) = match last {
                        None => (Phase::FirstChunk, s.start, s.first),
                        Some(l) => (Phase::Stall, l, s.stall),
                    };
                    prop_assert_eq!(phase, want);
                    prop_assert!(after_ms == t - reference && after_ms >= limit);
                    prop_assert_eq!(chunks, upto(false).count() as u64);
                    prop_assert_eq!(bytes, upto(false).map(|a| a.bytes).sum::<u64>());
                }
            }
        }
    }
}
