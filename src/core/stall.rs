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
//!
//! # Layout
//! This file is the decision alone (about 450 lines): validation, `decide`
//! and its two rounding helpers share the invariants above, so they are not
//! split further. The tests, including the simulation of invariant 7, are in
//! `stall/tests.rs`.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::core::deadline::{check_ms, DeadlineError, MAX_MS, MAX_TIMER_MS};
use crate::core::error::{Described, Kind, Message};

/// Which limit a decision is about. Crosses to JavaScript as its
/// [`as_str`](Phase::as_str) name (`"first-chunk"`), the `phase` of a
/// `StreamStalled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
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
    Limit {
        /// The option's JS name (`stallMs`).
        param: &'static str,
        /// The value given.
        value: f64,
    },
    /// A wait (`firstChunkMs`, or `firstByteMs` for headers) was NaN, ±∞,
    /// negative or past [`MAX_MS`]. Zero is accepted: a wait is often cut from
    /// what is left of a deadline, and nothing left means the wait has already
    /// run out (the stream stalls at once), not that the caller erred.
    Wait {
        /// The option's JS name (`firstChunkMs` or `firstByteMs`).
        param: &'static str,
        /// The value given.
        value: f64,
    },
    /// An instant (`deadline`, `startedAt`, `lastProgressAt` or `nowMs`) was
    /// outside `0 ..= MAX_MS`. Pass readings of one monotonic clock
    /// (`performance.now()`).
    Instant(DeadlineError),
    /// `param` (`chunks` or `bytes`) was not a whole number in
    /// `0 ..= MAX_MS`. Pass the counts the stream wrapper kept.
    Count {
        /// The count's name (`chunks` or `bytes`).
        param: &'static str,
        /// The value given.
        value: f64,
    },
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

impl Described for StallError {
    /// The fault in the value, in the words the deadline's errors use for the
    /// same faults (`NOT_FINITE`, `NEGATIVE`, `TOO_LARGE`), plus `NOT_POSITIVE`
    /// for a gap limit of 0 and `NOT_WHOLE` for a count with a fraction.
    fn code(&self) -> &'static str {
        let value = match *self {
            Self::Instant(e) => return e.code(),
            Self::Limit { value, .. } | Self::Wait { value, .. } | Self::Count { value, .. } => value,
        };
        if !value.is_finite() {
            "NOT_FINITE"
        } else if value < 0.0 {
            "NEGATIVE"
        } else if value > MAX_MS {
            "TOO_LARGE"
        } else if value == 0.0 {
            "NOT_POSITIVE"
        } else {
            "NOT_WHOLE"
        }
    }

    fn param(&self) -> Option<String> {
        Some(StallError::param(self).to_owned())
    }

    fn kind(&self) -> Kind {
        Kind::Range
    }

    fn message(&self) -> Message {
        let (id, param, value) = match *self {
            Self::Instant(ref e) => return e.message(),
            Self::Limit { param, value } => (msg::LIMIT, param, value),
            Self::Wait { param, value } => (msg::WAIT, param, value),
            Self::Count { param, value } => (msg::COUNT, param, value),
        };
        Message::new(id).arg("param", param).arg("max", MAX_MS).arg("value", value)
    }
}

/// The stall detector's message templates.
pub mod msg {
    crate::templates! { "stall";
        /// [`StallError::Limit`](super::StallError::Limit).
        LIMIT = "'{param}' must be a finite number of milliseconds greater than 0 and at most {max}: current value is {value}";
        /// [`StallError::Wait`](super::StallError::Wait).
        WAIT = "'{param}' must be a finite number of milliseconds, 0 or more and at most {max} (0: the wait has already run out): current value is {value}";
        /// [`StallError::Count`](super::StallError::Count).
        COUNT = "'{param}' must be a whole number between 0 and {max}: current value is {value}";
    }
}

crate::described_error!(display StallError);

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

/// The answer to "the timer fired at `now`: what now?". Crosses to
/// JavaScript as `{ kind: "wake" | "stalled" | "deadlineExceeded", … }` with
/// camelCase fields (the verdicts only: the wake is a scalar, see
/// src/wasm/stall.rs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Decision {
    /// Nothing has expired. Arm one timer for `delay_ms` and consult again
    /// when it fires. `at_ms` is the earliest instant any limit could expire,
    /// whatever progress the host records meanwhile, and `phase` the limit
    /// that would: the deadline, the first-chunk limit, or the stall limit
    /// (after progress; or, before the first chunk, the guard `now + stallMs`
    /// for a first chunk arriving right now). `delay_ms` is shorter than
    /// `at_ms − now` only when capped at [`MAX_TIMER_MS`].
    Wake {
        /// The earliest instant a limit could expire, in ms on the monotonic timeline.
        at_ms: f64,
        /// The timer delay to set, in ms: `at_ms − now`, capped at [`MAX_TIMER_MS`].
        delay_ms: f64,
        /// The limit that would expire at `at_ms`.
        phase: Phase,
    },
    /// The stream stalled. `phase` is [`Phase::FirstChunk`] or [`Phase::Stall`];
    /// `after_ms` is the silence observed at `now` (from `startedAt`, or from
    /// `lastProgressAt`); `chunks` and `bytes` echo the snapshot for the error.
    Stalled {
        /// Which limit ran out: [`Phase::FirstChunk`] or [`Phase::Stall`].
        phase: Phase,
        /// The silence observed at `now`, in ms.
        after_ms: f64,
        /// Chunks received so far.
        chunks: f64,
        /// Bytes received so far.
        bytes: f64,
    },
    /// The deadline passed `late_by_ms` before `now`.
    DeadlineExceeded {
        /// How long before `now` the deadline passed, in ms.
        late_by_ms: f64,
    },
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
        Self::named(first_chunk_ms, stall_ms, deadline_at, ["firstChunkMs", "stallMs"])
    }

    /// [`new`](Self::new), with the two limits' parameters named as the
    /// caller's API spells them (`["options.firstChunkMs", "options.stallMs"]`
    /// for the npm package; `firstByteMs` in the first place for the wait
    /// for headers), so its errors name what the caller wrote.
    pub fn named(
        first_chunk_ms: f64,
        stall_ms: f64,
        deadline_at: Option<f64>,
        [first_param, stall_param]: [&'static str; 2],
    ) -> Result<Self, StallError> {
        let first_chunk_ms = check_wait(first_param, first_chunk_ms)?;
        let stall_ms = check_limit(stall_param, stall_ms)?;
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

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
