//! Bindings for [`crate::core::stall`]. Names are the JS API's.
//!
//! # One watcher per stream, made at its first event; scalar where it is hot
//! `js/stall.js` asks the watcher when the stream is wrapped, when the one
//! wake-up comes, when a hold during which the wake-up came ends, and when a
//! burst starts: never per chunk. Wrapping is one scalar call, [`stall_start`]
//! (the watcher's [`StallWatcher::start`], which also validates the limits:
//! the first wake instant). The [`StallWatcherJs`] (`StallWatcher`) object is
//! made only at the stream's first event after that, from the same inputs, so
//! it starts in the same state ([`StallWatcher::start`] is a function of its
//! inputs), and freed the moment the stream settles. Why not at once: a
//! wasm-bindgen object registers with a `FinalizationRegistry`, whose
//! register and unregister measured several times the scalar call in Node 20,
//! and most streams settle before their first wake. The notes (`chunks`, `bytes`, `progress`,
//! `lastProgressAt`, `heldMs`, `heldSince`) stay JavaScript variables and
//! cross as scalar arguments of those calls. Every answer is one number: the
//! instant to wake at (`Infinity`: parked, no wake), or `NaN` when the
//! stream ends; only then (once per stream) does the wrapper ask for the
//! [`Verdict`] itself, a typed object generated from the Rust type
//! ([`StallWatcherJs::verdict`]: `{ kind: "stalled", phase, afterMs, chunks,
//! bytes }` or `{ kind: "deadlineExceeded", lateByMs }`), or get the error of
//! a note out of range thrown. So no code table and no positional layout is
//! mirrored in JavaScript, and a wake, which a bursty stream asks for every
//! `sampleMs`, allocates nothing in the core.
//!
//! [`stall_wake`] is the plain decision, for js/relay.js's range checks
//! before any I/O.
//!
//! # Numbers in, one number out
//! What a wrapped stream calls ([`first_chunk_wait`], [`stall_start`], the
//! watcher's constructor, `wake`, `resume` and `burst`) takes and returns
//! plain `f64`s: an instant that may be absent (`deadline_at`,
//! `last_progress_at`, `held_since`) is `NaN` for none, and an answer that
//! may be absent (the stream ends; no re-arm) is `NaN` too, where an `Option`
//! would cross as a JavaScript boolean and a second number going in, and as
//! an array of several Wasm results coming out, both of which JavaScriptCore
//! (Bun) converts on a slow path (BENCHMARKS.md, "Where users run it"). The
//! limits are always given: a limit left out is the core's default, which
//! the wrapper asks for first ([`first_chunk_wait`],
//! [`StallWatcherJs::no_limit`]). An instant is never `NaN` otherwise (a
//! deadline's instant and the notes' instants are the package's own clock
//! readings), so `NaN` is free to mean none. [`stall_start`] throws its error
//! from inside the call rather than return a `Result` (several Wasm results
//! too); nothing it allocated is alive then.
//!
//! Errors cross through [`super::to_js`]: a `RangeError` with `.param` as the
//! JS user wrote it (`"options.firstChunkMs"`) and `.code`.

use wasm_bindgen::prelude::*;

use super::{into_js, to_js};
use crate::core::sse::SseScan;
use crate::core::stall::{
    default_first_chunk_ms, Decision, Notes, Snapshot, StallConfig, StallError, StallWatcher, Step, BURST_GAP_MS,
    BURST_RUN, NO_LIMIT,
};

/// The npm package's names for the two limits.
const OPTIONS: [&str; 2] = ["options.firstChunkMs", "options.stallMs"];
/// The wait for headers: `firstByteMs` as the first-chunk wait.
const FIRST_BYTE: [&str; 2] = ["options.firstByteMs", "options.stallMs"];

thread_local! {
    /// The state [`sse_scan`] left, until the host reads it.
    static SSE_STATE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// [`SseScan::bytes`] over one chunk, from the `state` the host kept (0 for
/// a stream not begun; otherwise what [`sse_scan_state`] gave after the
/// previous chunk): whether the chunk holds progress. One call per chunk,
/// which bench/sse-scan.mjs measured against a JS twin of the scan; the
/// state stays a number the host keeps (a `SseScan` object per stream would
/// be Wasm memory that only a finalizer frees, and Workers run none unless
/// a flag asks).
#[wasm_bindgen(js_name = sseScan)]
pub fn sse_scan(state: u8, bytes: &[u8]) -> bool {
    let mut scan = SseScan::from_raw(state);
    let progress = scan.bytes(bytes);
    SSE_STATE.set(scan.raw());
    progress
}

/// [`sse_scan`] over text's UTF-8 bytes.
#[wasm_bindgen(js_name = sseScanText)]
pub fn sse_scan_text(state: u8, text: &str) -> bool {
    sse_scan(state, text.as_bytes())
}

/// The state after the last [`sse_scan`], for the host to keep (opaque to it).
#[wasm_bindgen(js_name = sseScanState)]
pub fn sse_scan_state() -> u8 {
    SSE_STATE.get()
}

/// [`crate::core::sse::error_event`]: `last`, the last byte sent (`undefined`: none).
#[wasm_bindgen(js_name = sseErrorEvent)]
pub fn sse_error_event(last: Option<u8>, data: &str) -> String {
    crate::core::sse::error_event(last, data)
}

/// [`crate::core::sse::is_event_stream`].
#[wasm_bindgen(js_name = isEventStream)]
pub fn is_event_stream(content_type: &str) -> bool {
    crate::core::sse::is_event_stream(content_type)
}

/// The message of a `StreamStalled` ([`crate::core::stall::stalled`]).
#[wasm_bindgen(js_name = stalledText)]
pub fn stalled_text(phase: &str, after_ms: f64, chunks: f64, bytes: f64) -> String {
    crate::core::stall::stalled(phase, after_ms, chunks, bytes).to_string()
}

/// `NaN` (none, see the module doc) as `None`.
fn instant(value: f64) -> Option<f64> {
    (!value.is_nan()).then_some(value)
}

/// `None` as `NaN` (see the module doc).
fn answer(value: Option<f64>) -> f64 {
    value.unwrap_or(f64::NAN)
}

/// The wait for first content when `firstChunkMs` is not given
/// ([`default_first_chunk_ms`]): a share of what is left from `started_at`
/// to `deadline_at` (`NaN`: no deadline, no limit).
#[wasm_bindgen(js_name = firstChunkWait)]
pub fn first_chunk_wait(deadline_at: f64, started_at: f64) -> f64 {
    default_first_chunk_ms(instant(deadline_at), started_at)
}

/// The first step of a stream's watcher ([`StallWatcher::start`]) as one
/// number: the instant to wake at, or `NaN` when the stream ends at once
/// (then make the [`StallWatcherJs`] and read its
/// [`verdict`](StallWatcherJs::verdict)). Validates the limits and instants
/// (as [`StallWatcherJs::new`]), naming the option as the user wrote it; the
/// error is thrown.
#[wasm_bindgen(js_name = stallStart)]
pub fn stall_start(first_chunk_ms: f64, stall_ms: f64, deadline_at: f64, started_at: f64, now_ms: f64) -> f64 {
    match StallWatcherJs::new(first_chunk_ms, stall_ms, deadline_at, started_at, now_ms) {
        Ok(watcher) => answer(watcher.step()),
        Err(error) => wasm_bindgen::throw_val(error),
    }
}

/// The wrapper's notes from the scalars [`StallWatcherJs::wake`] and
/// [`StallWatcherJs::resume`] receive. `burst` stays 0: the burst detector
/// runs in JavaScript, and the watcher does not read it.
fn notes(
    chunks: f64,
    bytes: f64,
    progress: f64,
    last_progress_at: Option<f64>,
    held_ms: f64,
    held_since: Option<f64>,
) -> Notes {
    Notes { chunks, bytes, progress, last_progress_at, held_ms, held_since, burst: 0 }
}

/// One wrapped stream's [`StallWatcher`], and its last answer.
#[wasm_bindgen(js_name = StallWatcher)]
pub struct StallWatcherJs {
    watcher: StallWatcher,
    last: Result<Step, StallError>,
}

#[wasm_bindgen(js_class = StallWatcher)]
impl StallWatcherJs {
    /// Validates the limits (a limit left out is the core's default:
    /// [`first_chunk_wait`] for `firstChunkMs`, [`no_limit`](Self::no_limit)
    /// for `stallMs`) and plans the first step at `now_ms` for a stream
    /// wrapped at `started_at` ([`StallWatcher::start`]); read it with
    /// [`step`](Self::step). `deadline_at` is `NaN` for none.
    #[wasm_bindgen(constructor)]
    pub fn new(
        first_chunk_ms: f64,
        stall_ms: f64,
        deadline_at: f64,
        started_at: f64,
        now_ms: f64,
    ) -> Result<StallWatcherJs, JsValue> {
        let config = StallConfig::named(first_chunk_ms, stall_ms, instant(deadline_at), OPTIONS).map_err(to_js)?;
        let (watcher, step) = StallWatcher::start(config, started_at, now_ms).map_err(to_js)?;
        Ok(Self { watcher, last: Ok(step) })
    }

    /// The core's `BURST_GAP_MS`, for the wrapper's per-chunk burst detector.
    #[wasm_bindgen(js_name = burstGapMs)]
    pub fn burst_gap_ms() -> f64 {
        BURST_GAP_MS
    }

    /// The core's `NO_LIMIT`: `stallMs` when it is left out.
    #[wasm_bindgen(js_name = noLimit)]
    pub fn no_limit() -> f64 {
        NO_LIMIT
    }

    /// The core's `BURST_RUN`.
    #[wasm_bindgen(js_name = burstRun)]
    pub fn burst_run() -> u32 {
        BURST_RUN
    }

    /// The last answer: the instant to wake at (`Infinity`: none), or `None`
    /// when the stream ends ([`verdict`](Self::verdict)).
    fn step(&self) -> Option<f64> {
        match self.last {
            Ok(Step::Wake { at_ms }) => Some(at_ms),
            Ok(Step::Idle) => Some(f64::INFINITY),
            Ok(Step::End(_)) | Err(_) => None,
        }
    }

    /// [`StallWatcher::on_wake`]: the one timer fired at `now_ms`. The notes
    /// are the wrapper's (an instant `NaN` for none). The instant to wake at
    /// (`Infinity`: none), or `NaN` when the stream ends.
    #[allow(clippy::too_many_arguments)] // scalar: per wake, numbers only (module doc; BENCHMARKS.md, "Where users run it")
    pub fn wake(
        &mut self,
        now_ms: f64,
        chunks: f64,
        bytes: f64,
        progress: f64,
        last_progress_at: f64,
        held_ms: f64,
        held_since: f64,
    ) -> f64 {
        let notes = notes(chunks, bytes, progress, instant(last_progress_at), held_ms, instant(held_since));
        self.last = self.watcher.on_wake(&notes, now_ms);
        answer(self.step())
    }

    /// [`StallWatcher::on_resume`]: a hold during which the timer fired ended
    /// at `now_ms`. Answers as [`wake`](Self::wake).
    pub fn resume(
        &mut self,
        now_ms: f64,
        chunks: f64,
        bytes: f64,
        progress: f64,
        last_progress_at: f64,
        held_ms: f64,
    ) -> f64 {
        let notes = notes(chunks, bytes, progress, instant(last_progress_at), held_ms, None);
        self.last = self.watcher.on_resume(&notes, now_ms);
        answer(self.step())
    }

    /// [`StallWatcher::on_burst`]: the instant to re-arm for, or `NaN` to keep the armed wake.
    pub fn burst(&mut self, now_ms: f64, progress: f64) -> f64 {
        answer(self.watcher.on_burst(progress, now_ms))
    }

    /// Whether progress is counted, not timed ([`StallWatcher::sampling`]).
    #[wasm_bindgen(getter)]
    pub fn sampling(&self) -> bool {
        self.watcher.sampling()
    }

    /// Why the stream ends (after an answer of `NaN`): the typed
    /// [`Verdict`](crate::core::stall::Verdict); a note out of range is thrown
    /// as its `RangeError`.
    #[wasm_bindgen(unchecked_return_type = "Verdict")]
    pub fn verdict(&self) -> Result<JsValue, JsValue> {
        match &self.last {
            Ok(Step::End(verdict)) => into_js(verdict),
            Err(error) => Err(to_js(*error)),
            Ok(_) => Ok(JsValue::UNDEFINED),
        }
    }
}

/// Validates the limits and the snapshot, then decides at `now_ms`
/// ([`StallConfig::decide`]): the delay to wait before asking again (a whole
/// number ≥ 1), or `undefined` when a verdict is due. `deadline_at` and
/// `last_progress_at` are `undefined` when absent.
#[allow(clippy::too_many_arguments)] // scalar: as ReadMachine's, serde options cost the main .wasm (BENCHMARKS.md, "Size and start-up")
#[wasm_bindgen(js_name = stallWake)]
pub fn stall_wake(
    first_chunk_ms: f64,
    stall_ms: f64,
    deadline_at: Option<f64>,
    started_at: f64,
    last_progress_at: Option<f64>,
    chunks: f64,
    bytes: f64,
    now_ms: f64,
) -> Result<Option<f64>, JsValue> {
    let config = StallConfig::named(first_chunk_ms, stall_ms, deadline_at, OPTIONS).map_err(to_js)?;
    match config.decide(&Snapshot { started_at, last_progress_at, chunks, bytes }, now_ms).map_err(to_js)? {
        Decision::Wake { delay_ms, .. } => Ok(Some(delay_ms)),
        _ => Ok(None),
    }
}

/// The wait for response headers (`fetchWithDeadline`'s `firstByteMs`): the
/// same decision with `firstByteMs` as the first-chunk wait and nothing
/// received. The delay to wait, or `undefined` once the wait has run out
/// (at once for `firstByteMs` 0: no time was left to wait); the silence is
/// then `nowMs − startedAt`. Bad input names `options.firstByteMs`.
#[wasm_bindgen(js_name = firstByteWake)]
pub fn first_byte_wake(first_byte_ms: f64, started_at: f64, now_ms: f64) -> Result<Option<f64>, JsValue> {
    // Nothing is ever received, so the gap limit never applies: the largest one.
    let config = StallConfig::named(first_byte_ms, NO_LIMIT, None, FIRST_BYTE).map_err(to_js)?;
    match config.decide(&Snapshot::started(started_at), now_ms).map_err(to_js)? {
        Decision::Wake { delay_ms, .. } => Ok(Some(delay_ms)),
        _ => Ok(None),
    }
}
