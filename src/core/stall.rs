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
//! The per-chunk path stays in the host and never calls this module's
//! decisions: it writes [`Notes`] (`lastProgressAt` and the counts), nothing
//! else. The host keeps one timer, armed for the instant the
//! [`StallWatcher`] answers, and consults the watcher only when that timer
//! fires (and on the few events below), which calls [`StallConfig::decide`].
//! A chunk never re-arms the timer: when progress has happened since arming,
//! the timer fires before the true expiry and `decide` answers with the next
//! wake instead of a stall.
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
//! # The watcher: hold, park, resume (one machine, two hosts)
//! [`StallWatcher`] is one stream's state machine, driven by js/stall.js
//! (through src/wasm/stall.rs) and by src/web/stall.rs alike. It reads no
//! clock and performs no I/O: events go in with the time, a [`Step`] comes
//! out (wake me at `T`, nothing to do while parked, or the [`Verdict`]).
//!
//! - [`StallWatcher::start`]: the stream is wrapped.
//! - [`StallWatcher::on_wake`]: the one timer fired.
//! - [`StallWatcher::on_resume`]: a hold during which the timer fired
//!   ([`StallWatcher::parked`]) ended. A hold that ends otherwise is only
//!   noted ([`Notes::resume`]): the armed wake is early or on time, never
//!   late, because held time only postpones the limits.
//! - [`StallWatcher::on_burst`]: [`Notes::chunk`] saw [`BURST_RUN`] progress
//!   chunks less than [`BURST_GAP_MS`] apart.
//!
//! Why holds: the host reads one chunk ahead. When a chunk arrives and no
//! read is waiting for it, it is held until the consumer reads,
//! and nothing waits on the source meanwhile: a slow or pausing consumer is
//! not a silent source. Why bursts: the clock read is most of what the host
//! adds per chunk, and it is only wasted where thousands of chunks arrive
//! within one millisecond; there progress is counted, and a wake every
//! `sample_ms` (`⌊stallMs / 4⌋` within `1 ..=` [`MAX_SAMPLE_MS`]) times it.
//! Why late wakes yield: a timer that fires more than [`LATE_MS`] after its
//! instant was held up by a busy event loop (a long synchronous task, a GC
//! pause), and bytes the source sent meanwhile may still wait in the socket
//! behind the timer's task.
//!
//! # Defined outcomes
//! - The active limit is `firstChunkMs` from `startedAt` while no progress has
//!   been recorded, then `stallMs` from `lastProgressAt`.
//! - The limit that expires first decides. A stall is due once `now − ref ≥
//!   limit`; the deadline once `now ≥ deadline`.
//! - At a tie, and whenever `stallMs` (or `firstChunkMs`) reaches past the
//!   deadline, the deadline wins: the answer is
//!   [`Verdict::DeadlineExceeded`], never a stall. A limit longer than the
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
//! # Invariants of the watcher (property tests in `stall/watcher_tests.rs`)
//! 8. Never a panic: every event is total on any numbers; a note out of range
//!    is an error naming it (`chunks`, `lastProgressAt`, `nowMs`…).
//! 9. Only time spent waiting on the source counts. A wake during a hold
//!    parks the watcher: only the deadline can expire ([`Step::Idle`] when
//!    there is none), and [`StallWatcher::on_resume`] replaces the wake with
//!    a fresh decision. The active limit's reference (`startedAt` or the last
//!    progress) moves forward by the held time noted since it, so silence is
//!    the sum of the waits on the source since the last progress chunk, and a
//!    real stall is declared after exactly its limit of waiting.
//! 10. Never early, at most `sample_ms` late. Each progress chunk is timed,
//!     except in a burst: after [`BURST_RUN`] timed progress chunks less than
//!     [`BURST_GAP_MS`] apart, chunks are only counted, and every wake is
//!     within `sample_ms`. Each wake that counts new progress takes its own
//!     instant (the start of a hold under way, if any) as the last progress,
//!     never earlier than the true last progress chunk; a wake that counts
//!     fewer than [`BURST_RUN`] ends the burst. So a stall is never declared
//!     early and at most `sample_ms` of waiting late; without a burst, at the
//!     exact instant. The deadline is met at its instant either way and wins
//!     ties.
//! 11. A late wake looks at what has arrived before it declares silence: a
//!     stall from a wake more than [`LATE_MS`] late is not declared; the watcher
//!     asks for a wake [`YIELD_MS`] later (a macrotask, after the I/O queued
//!     meanwhile), and keeps yielding while nothing arrives, late or not, at
//!     most [`MAX_YIELDS`] times in a row: a runtime can take more than one
//!     turn to hand over bytes that waited behind a long task (seen in Deno
//!     on a loaded machine: no chunk within 6 ms of a 700 ms block). The deadline is never
//!     deferred. A verdict is thereby at most `MAX_YIELDS × YIELD_MS` (plus
//!     timer lag) later than it would be, and never earlier.
//! 12. Simulation: a host loop (holds of random length, bursts, non-progress
//!     chunks, exact or late timers) against a per-millisecond oracle of the
//!     time waited on the source: with exact timers the verdict, phase,
//!     `after_ms` and counts are the oracle's (within `sample_ms` of waiting
//!     when a burst was sampled), and with late timers nothing is declared
//!     early.
//!
//! # Layout
//! This file is the decision (validation, `decide` and its two rounding
//! helpers share invariants 1–7) and the watcher that drives it. The tests
//! are in `stall/tests.rs` (the decision, with the simulation of invariant 7)
//! and `stall/watcher_tests.rs` (the watcher).

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
        /// [`stalled`](super::stalled) before the response headers.
        STALLED_FIRST_BYTE = "stream stalled: no response headers after {afterMs:ms} ms";
        /// [`stalled`](super::stalled) before the first progress chunk.
        STALLED_FIRST_CHUNK = "stream stalled: no first chunk after {afterMs:ms} ms";
        /// [`stalled`](super::stalled) between progress chunks.
        STALLED = "stream stalled: no progress for {afterMs:ms} ms after {chunks} chunks ({bytes} bytes)";
    }
}

/// The message of a `StreamStalled` error, which both hosts raise: `phase`
/// is the JavaScript API's name (`"first-byte"`, `"first-chunk"` or
/// `"stall"`), `after_ms` the silence observed.
pub fn stalled(phase: &str, after_ms: f64, chunks: f64, bytes: f64) -> Message {
    match phase {
        "first-byte" => Message::new(msg::STALLED_FIRST_BYTE).arg("afterMs", after_ms),
        "first-chunk" => Message::new(msg::STALLED_FIRST_CHUNK).arg("afterMs", after_ms),
        _ => Message::new(msg::STALLED).arg("afterMs", after_ms).arg("chunks", chunks).arg("bytes", bytes),
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

/// The answer to "the timer fired at `now`: what now?": look again later,
/// or the stream's verdict. Not serialized: the bindings pass on the wake's
/// delay as a number (src/wasm/stall.rs `stallWake`), and a verdict
/// reaches JavaScript through [`Step::End`].
#[derive(Debug, Clone, Copy, PartialEq)]
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
    /// A limit has expired: the stream stalled or ran out of time.
    End(Verdict),
}

/// How a stream ended: the verdict of a [`Decision::End`] and of
/// [`Step::End`]. Crosses to JavaScript as `{ kind: "stalled", phase,
/// afterMs, chunks, bytes }` or `{ kind: "deadlineExceeded", lateByMs }`
/// (src/wasm/stall.rs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub enum Verdict {
    /// The stream stalled. `phase` is [`Phase::FirstChunk`] or [`Phase::Stall`];
    /// `after_ms` is the silence observed at `now` (from `startedAt`, or from
    /// `lastProgressAt`; for the watcher, time spent waiting on the source
    /// only); `chunks` and `bytes` echo the counts so far for the error.
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
            Phase::Deadline => Decision::End(Verdict::DeadlineExceeded { late_by_ms: (now - at) + 0.0 }),
            Phase::FirstChunk | Phase::Stall => {
                Decision::End(Verdict::Stalled { phase, after_ms: (now - reference) + 0.0, chunks, bytes })
            }
        })
    }
}

// ---- the watcher: one stream's hold / park / resume machine ------------------------------

/// Progress chunks closer than this (ms) are a burst (see [`Notes::chunk`])…
pub const BURST_GAP_MS: f64 = 0.1;
/// …once this many come in a row; while sampling, a wake that counts fewer
/// fresh progress chunks ends the burst.
pub const BURST_RUN: u32 = 32;
/// While sampling, the longest wait between wakes (ms): the bound on how late
/// a verdict can be (the watcher's `sample_ms` is `⌊stallMs / 4⌋` within `1 ..= 16`).
pub const MAX_SAMPLE_MS: f64 = 16.0;
/// A wake later than its instant by more than this (ms) was held up by a busy
/// event loop (invariant 11).
pub const LATE_MS: f64 = 4.0;
/// How long a late wake yields to the I/O queued meanwhile before it looks again (ms).
pub const YIELD_MS: f64 = 10.0;
/// At most this many yields in a row; then the verdict stands (a loop that is
/// always late cannot hide a stall).
pub const MAX_YIELDS: u32 = 3;
/// A limit that is not given: 2^53 − 1 ms, so the deadline (if any) decides.
pub const NO_LIMIT: f64 = MAX_MS;

/// The default wait for first content is this share of the time left when
/// the wait starts ([`default_first_chunk_ms`]): the other half is what a
/// retry (or a fallback) gets, as much as the attempt that was cut.
pub const FIRST_CHUNK_SHARE: f64 = 0.5;
/// The default wait for first content is never shorter than this (ms): a
/// model's first token legitimately takes seconds (queueing and prefill; see
/// the module doc, *Why three limits*, for where this figure comes from).
/// When no more than this is left, the deadline decides.
pub const FIRST_CHUNK_FLOOR_MS: f64 = 5_000.0;

/// The wait for first content (`firstChunkMs`) when the caller gave none:
/// [`FIRST_CHUNK_SHARE`] of the time left from `started_at` (where the wait
/// starts) to `deadline_at`, in whole ms, never below
/// [`FIRST_CHUNK_FLOOR_MS`]; [`NO_LIMIT`] without a deadline.
///
/// Why a default at all: on an event stream only events are progress, so an
/// upstream that sends keep-alive comments while it queues (what LLM gateways
/// do) is silent; with no first-chunk limit that silence ran to the deadline,
/// leaving no time for the retry or fallback the caller configured. Why a
/// share and no fixed ceiling: a fixed figure would cut a slow model's
/// legitimate first token (a long prompt, a reasoning model) however long
/// the budget; half of what is left grows with the budget and still leaves a
/// retry as much time as the attempt it replaces. Why the floor: below it,
/// cutting would mostly cut legitimate first tokens, so the deadline decides.
///
/// Total: any input gives a number in `FIRST_CHUNK_FLOOR_MS ..= MAX_MS` (a
/// NaN or past deadline counts as nothing left).
pub fn default_first_chunk_ms(deadline_at: Option<f64>, started_at: f64) -> f64 {
    let Some(at) = deadline_at else { return NO_LIMIT };
    let share = ((at - started_at) * FIRST_CHUNK_SHARE).floor();
    if share > FIRST_CHUNK_FLOOR_MS {
        share.min(MAX_MS)
    } else {
        FIRST_CHUNK_FLOOR_MS
    }
}

/// What the host has noted about one stream since it was wrapped: plain data
/// that the host writes per chunk and per hold without calling the watcher,
/// and hands to it at a wake ([`StallWatcher::on_wake`]) or when a parked
/// hold ends ([`StallWatcher::on_resume`]).
///
/// The JavaScript host keeps these as local variables and writes the same
/// lines as [`chunk`](Self::chunk), [`hold`](Self::hold) and
/// [`resume`](Self::resume) (js/stall.js `onRead`, `held`, `resume`): per-chunk
/// work never crosses into Wasm. The Rust host calls the methods.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Notes {
    /// Chunks passed on.
    pub chunks: f64,
    /// Their bytes (a chunk without a size adds none).
    pub bytes: f64,
    /// Progress chunks passed on.
    pub progress: f64,
    /// When the latest *timed* progress chunk arrived (while the watcher
    /// samples, progress is counted, not timed); `None` before the first.
    pub last_progress_at: Option<f64>,
    /// Time spent in holds that ended since `last_progress_at` (since the
    /// start before it), in ms: a timed progress chunk resets it to 0.
    pub held_ms: f64,
    /// When the current hold began: a chunk read ahead waits for a read, so
    /// nobody waits on the source. `None`: no hold.
    pub held_since: Option<f64>,
    /// Timed progress chunks in a row less than [`BURST_GAP_MS`] apart (held
    /// time not counted): the host's burst detector.
    pub burst: u32,
}

impl Notes {
    /// One chunk passed on: `size` its bytes (`None`: it has no size),
    /// `progress` whether it counts. A progress chunk is timed with `now()`
    /// unless the watcher is `sampling`. Returns the instant when this chunk
    /// completes a run of [`BURST_RUN`] close chunks: tell the watcher
    /// ([`StallWatcher::on_burst`]).
    pub fn chunk(
        &mut self,
        size: Option<f64>,
        progress: bool,
        sampling: bool,
        now: impl FnOnce() -> f64,
    ) -> Option<f64> {
        self.chunks += 1.0;
        if let Some(size) = size {
            self.bytes += size;
        }
        if !progress {
            return None;
        }
        self.progress += 1.0;
        if sampling {
            return None;
        }
        let t = now();
        let close = self.last_progress_at.is_some_and(|last| t - last - self.held_ms < BURST_GAP_MS);
        self.last_progress_at = Some(t);
        self.held_ms = 0.0;
        if !close {
            self.burst = 0;
            return None;
        }
        self.burst += 1;
        if self.burst < BURST_RUN {
            return None;
        }
        self.burst = 0;
        Some(t)
    }

    /// A chunk read ahead now waits for a read (none was waiting for it).
    pub fn hold(&mut self, now: f64) {
        self.held_since = Some(now);
    }

    /// The consumer reads again: the hold ends and its time is added to `held_ms`.
    pub fn resume(&mut self, now: f64) {
        if let Some(since) = self.held_since.take() {
            let held = now - since;
            if held > 0.0 {
                self.held_ms += held;
            }
        }
    }
}

/// What the host does next, the answer to every event of a [`StallWatcher`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Arm the one timer for `at_ms` (replacing the armed one) and call
    /// [`StallWatcher::on_wake`] when it fires.
    Wake {
        /// The instant to wake at, in ms on the host's monotonic timeline.
        at_ms: f64,
    },
    /// Parked with no deadline: nothing can expire until the hold ends. No
    /// timer; call [`StallWatcher::on_resume`] when the consumer reads.
    Idle,
    /// The stream ends: error it with the verdict and abort the upstream.
    End(Verdict),
}

/// Which progress instant the stall limit counts from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reference {
    /// The host's: [`Notes::last_progress_at`] plus [`Notes::held_ms`] (or the
    /// start plus `held_ms` before the first progress chunk).
    Host,
    /// A sampling wake's own instant (`at`), plus the held time the host
    /// noted after it (`held_ms − held_base`).
    Sampled { at: f64, held_base: f64 },
}

/// One wrapped stream's stall watcher: the hold / park / resume machine both
/// hosts drive (see the module doc, *The watcher*). It reads no clock: every
/// event carries `now`, and every answer is a [`Step`].
#[derive(Debug, Clone)]
pub struct StallWatcher {
    config: StallConfig,
    sample_ms: f64,
    started_at: f64,
    reference: Reference,
    /// [`Notes::progress`] at the last event that read the notes.
    seen_progress: f64,
    sampling: bool,
    parked: bool,
    /// Late wakes in a row that yielded instead of declaring a stall.
    yields: u32,
    /// The instant of the armed wake; `∞` for none.
    wake_at: f64,
}

impl StallWatcher {
    /// A watcher for a stream wrapped at `started_at` (where the first-chunk
    /// limit counts from), planning its first step at `now_ms`.
    ///
    /// # Errors
    /// `startedAt` or `nowMs` outside `0 ..= MAX_MS` ([`StallError::Instant`]).
    pub fn start(config: StallConfig, started_at: f64, now_ms: f64) -> Result<(Self, Step), StallError> {
        let sample_ms = (config.stall_ms / 4.0).floor().clamp(1.0, MAX_SAMPLE_MS);
        let mut watcher = Self {
            config,
            sample_ms,
            started_at,
            reference: Reference::Host,
            seen_progress: 0.0,
            sampling: false,
            parked: false,
            yields: 0,
            wake_at: f64::INFINITY,
        };
        let decision = config.decide(&Snapshot::started(started_at), now_ms)?;
        let step = watcher.act(decision, now_ms);
        Ok((watcher, step))
    }

    /// The limits.
    pub const fn config(&self) -> &StallConfig {
        &self.config
    }

    /// Whether progress is counted, not timed (a burst, invariant 10): the
    /// `sampling` argument of [`Notes::chunk`].
    pub const fn sampling(&self) -> bool {
        self.sampling
    }

    /// Whether a wake came during the current hold: then the host calls
    /// [`on_resume`](Self::on_resume) when the hold ends.
    pub const fn parked(&self) -> bool {
        self.parked
    }

    /// The longest wait between wakes while sampling, in ms.
    pub const fn sample_ms(&self) -> f64 {
        self.sample_ms
    }

    /// The instant of the armed wake, if any.
    pub fn wake_at(&self) -> Option<f64> {
        self.wake_at.is_finite().then_some(self.wake_at)
    }

    /// The one timer fired at `now_ms`.
    ///
    /// # Errors
    /// A note or instant outside its range ([`StallError`] naming it): the
    /// host ends the stream with it.
    pub fn on_wake(&mut self, notes: &Notes, now_ms: f64) -> Result<Step, StallError> {
        let late = now_ms - self.wake_at;
        self.wake_at = f64::INFINITY;
        self.account(notes, now_ms);
        if notes.held_since.is_some() {
            // No read is outstanding: the consumer holds the stream up, not the source.
            self.parked = true;
            if self.config.deadline_at.is_none() {
                return Ok(Step::Idle);
            }
        }
        let decision = self.decide(notes, now_ms)?;
        if matches!(decision, Decision::End(Verdict::Stalled { .. }))
            && (late > LATE_MS || self.yields > 0)
            && self.yields < MAX_YIELDS
        {
            self.yields += 1;
            self.wake_at = now_ms + YIELD_MS;
            return Ok(Step::Wake { at_ms: self.wake_at });
        }
        Ok(self.act(decision, now_ms))
    }

    /// A hold during which the timer fired ([`parked`](Self::parked)) ended
    /// at `now_ms` (the host has noted it: [`Notes::resume`]). Any other call
    /// changes nothing and answers the armed wake.
    ///
    /// # Errors
    /// As [`on_wake`](Self::on_wake).
    pub fn on_resume(&mut self, notes: &Notes, now_ms: f64) -> Result<Step, StallError> {
        if !self.parked {
            return Ok(match self.wake_at() {
                Some(at_ms) => Step::Wake { at_ms },
                None => Step::Idle,
            });
        }
        self.parked = false;
        self.seen_progress = notes.progress;
        self.wake_at = f64::INFINITY;
        let decision = self.config.decide(&self.snapshot(notes), now_ms)?;
        Ok(self.act(decision, now_ms))
    }

    /// A burst began at `now_ms` ([`Notes::chunk`] said so; `progress` is
    /// [`Notes::progress`]): progress is counted, not timed, from here on.
    /// Returns the instant to re-arm the timer for when the armed wake is
    /// further than `sample_ms` away; `None`: keep it.
    pub fn on_burst(&mut self, progress: f64, now_ms: f64) -> Option<f64> {
        self.sampling = true;
        // The chunk that completed the run was timed by the host.
        self.reference = Reference::Host;
        self.seen_progress = progress;
        let at = now_ms + self.sample_ms;
        if self.wake_at > at {
            self.wake_at = at;
            Some(at)
        } else {
            None
        }
    }

    /// Folds the progress counted since the last event into the reference.
    fn account(&mut self, notes: &Notes, now_ms: f64) {
        let fresh = notes.progress - self.seen_progress;
        self.seen_progress = notes.progress;
        if self.sampling {
            // Progress came at some instant up to now, and before any hold
            // began: this is never earlier than the true last progress chunk.
            if fresh > 0.0 {
                self.reference =
                    Reference::Sampled { at: notes.held_since.unwrap_or(now_ms), held_base: notes.held_ms };
            }
            if fresh < f64::from(BURST_RUN) {
                self.sampling = false;
            }
        } else if fresh > 0.0 {
            // Not sampling since the last event: the host timed every one of them.
            self.reference = Reference::Host;
        }
    }

    /// What the stream looks like to the limits: the references moved forward
    /// by the held time (invariant 9).
    fn snapshot(&self, notes: &Notes) -> Snapshot {
        let (started_at, last_progress_at) = match (self.reference, notes.last_progress_at) {
            (Reference::Sampled { at, held_base }, _) => (self.started_at, Some(at + (notes.held_ms - held_base))),
            (Reference::Host, Some(at)) => (self.started_at, Some(at + notes.held_ms)),
            (Reference::Host, None) => (self.started_at + notes.held_ms, None),
        };
        Snapshot { started_at, last_progress_at, chunks: notes.chunks, bytes: notes.bytes }
    }

    fn decide(&self, notes: &Notes, now_ms: f64) -> Result<Decision, StallError> {
        if self.parked {
            // Only the deadline applies: the same decision without limits.
            let deadline_only = StallConfig { first_chunk_ms: NO_LIMIT, stall_ms: NO_LIMIT, ..self.config };
            let now = Snapshot {
                started_at: now_ms,
                last_progress_at: Some(now_ms),
                chunks: notes.chunks,
                bytes: notes.bytes,
            };
            deadline_only.decide(&now, now_ms)
        } else {
            self.config.decide(&self.snapshot(notes), now_ms)
        }
    }

    fn act(&mut self, decision: Decision, now_ms: f64) -> Step {
        match decision {
            Decision::Wake { delay_ms, .. } => {
                self.yields = 0;
                let delay = if self.sampling && delay_ms > self.sample_ms { self.sample_ms } else { delay_ms };
                self.wake_at = now_ms + delay;
                Step::Wake { at_ms: self.wake_at }
            }
            Decision::End(verdict) => {
                self.wake_at = f64::INFINITY;
                Step::End(verdict)
            }
        }
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
#[cfg(all(test, not(target_arch = "wasm32")))]
mod watcher_tests;
