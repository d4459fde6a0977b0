//! One streamed read, as one machine: what a host does with a streamed body
//! that may fail, be resumed, stall or run out of time.
//!
//! # Why one machine
//! A streamed read takes many decisions: where an event ends (a reader never
//! gets half of one), which chunks are progress (events, not keep-alive
//! comments or `retry:`-only events), when the stream has stalled, whether a
//! failed attempt is made again and how (as it was, with `Last-Event-ID`,
//! through the caller's hook, or not at all), whether a resumed answer may be
//! spliced onto what the reader has, and what the reader and a public client
//! are told when the read ends. Each of those rules is a piece of the core
//! ([`EventCut`], [`SseScan`], [`StallWatcher`], [`RetryRun`], [`Resume`],
//! [`DeliveredIds`], [`resume_refusal`], [`status_failure`],
//! [`fallback_answer`]); [`Read`] is the one place that puts them together, so
//! a host keeps only what it alone can do: the reader, the timer, the signals
//! and the requests.
//!
//! # How a host drives it (sans I/O, in the manner of quinn)
//! The host tells the machine what happened ([`Input`]) with the time, then
//! takes the machine's [`Action`]s with [`Read::poll`] until there are none:
//!
//! - [`Action::Connect`]: make attempt `n` (as it was, with a
//!   `Last-Event-ID`, or by calling the caller's hook with what was
//!   delivered), and report its answer's head ([`Input::Head`]), its chunks
//!   ([`Input::Chunk`]), its end ([`Input::End`]) or its failure
//!   ([`Input::Failed`]).
//! - [`Action::Abort`]: the current attempt is over: abort its request.
//! - [`Action::DeliverChunk`]: hand the chunk just reported to the reader, as
//!   it came (the common case). [`Action::Keep`]: hold it instead; then
//!   [`Action::Deliver`] hands the reader the next bytes held and
//!   [`Action::Discard`] drops them, in the order held. The machine counts
//!   the bytes and the host keeps them, so an event is held once, where it
//!   was read (the machine's memory does not grow with it).
//! - [`Action::Wake`]: arm the one timer for this instant (replacing the armed
//!   one; `∞`: none) and report [`Input::Wake`] when it fires.
//! - [`Action::End`]: the read is over ([`Ending`]): the reader's error, with
//!   the fallback's status and words for a public client.
//!
//! The machine reads no clock and performs no I/O: every input carries
//! `now_ms`, and the same inputs give the same actions (the conformance op
//! `read` runs one script in both hosts).
//!
//! While the stall watcher samples a burst ([`Read::sampling`]), a chunk's
//! time is not read: progress is counted, and the watcher's wakes (at most
//! `sample_ms` apart) time it. A host may then report a chunk with its last
//! clock reading since the latest wake (js/resume.js: the instant the reader
//! asked for it) instead of reading the clock again; any other input ends
//! that licence until a chunk's answer says the watcher still samples. The
//! error is bounded as the sampling's own: held time overstated by at most
//! the waits on the source since the latest wake, so a stall is never early
//! and at most `sample_ms` late (src/core/stall.rs, invariant 10).
//!
//! # Invariants (each is a test in `read/tests.rs`)
//! 1. Before content reached the reader, a failed attempt is made again as it
//!    was, inside the deadline and the retry loop's limits, and the reader sees
//!    nothing of it; a non-ok answer that is not retried is handed back as it
//!    is ([`Ending::HandBack`]).
//! 2. An event stream reaches the reader in whole events; a failure drops the
//!    unfinished one. A byte-order mark behaves as its absence, except that
//!    the first body's is passed on (a reader strips it).
//! 3. Progress is what [`SseScan`] says on an event stream (a field other
//!    than `retry`), any byte on another body: comments and `retry:`-only
//!    events are silence to the stall watcher.
//! 4. After content, a stream is never restarted as it was: it resumes by
//!    `Last-Event-ID` (an event stream answered, held until its first event
//!    with an id, which must not be one already delivered), through the hook
//!    (a body that is not an event stream needs a 206 whose `Content-Range`
//!    starts where the reader is), or ends. A refused resumed answer is a
//!    failed attempt, never content.
//! 5. An event or a line past its cap ends the read at once
//!    ([`ReadError::TooLarge`]), with the events before it delivered.
//! 6. The read ends exactly once; after [`Action::End`] every input is
//!    ignored and nothing more is delivered.

use std::collections::VecDeque;

use crate::core::error::Message;
use crate::core::plan::stream::{fallback_answer, FallbackAnswer, FallbackCause, FallbackScope};
use crate::core::resume::{
    content_range_start, not_resumable, resume_refusal, status_failure, CutRefusal, Delivered, DeliveredIds, Event,
    EventCut, Next, Resume, NOT_RESUMABLE,
};
use crate::core::retry::{AfterFailure, AttemptFailure, Failure, RetryRun, Start, StopReason};
use crate::core::retry_budget::RetryBudget;
use crate::core::sse::SseScan;
use crate::core::stall::{
    default_first_chunk_ms, stalled, Notes, Phase, StallConfig, StallError, StallWatcher, Step, Verdict, NO_LIMIT,
};

/// The longest delivery a host hands on as one piece ([`Action::Deliver`]):
/// the default event cap.
pub const JOIN_MAX: usize = crate::core::resume::MAX_EVENT_BYTES;

/// A read's options, checked by the host's option parsing (the limits again
/// by [`StallConfig`] when an attempt starts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadOptions {
    /// The deadline instant (a stream's retries live inside one).
    pub deadline_at: f64,
    /// The wait for an attempt's response headers (`firstByteMs`).
    pub first_byte_ms: Option<f64>,
    /// The wait for the first progress chunk (`firstChunkMs`); `None`: the
    /// core's default ([`default_first_chunk_ms`]).
    pub first_chunk_ms: Option<f64>,
    /// The longest silence between progress chunks (`stallMs`); `None`: no limit.
    pub stall_ms: Option<f64>,
    /// The first-chunk wait counts from each attempt's headers
    /// (`fetchWithDeadline`), not from the attempt's start (`relay`).
    pub from_headers: bool,
    /// The caller gave a resume hook.
    pub hook: bool,
    /// The event cap, in bytes ([`crate::core::resume::MAX_EVENT_BYTES`] by default).
    pub max_event_bytes: usize,
    /// The line cap, in bytes ([`crate::core::resume::MAX_LINE_BYTES`] by default).
    pub max_line_bytes: usize,
}

/// An answer's head, as the host read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Head<'a> {
    /// Its status.
    pub status: u16,
    /// Its content type is `text/event-stream`.
    pub event_stream: bool,
    /// Its `Content-Range` header, as it came.
    pub content_range: Option<&'a str>,
    /// It has a body.
    pub body: bool,
    /// For a non-ok answer: the caller's `classify` of it (`None`: the
    /// core's [`status_failure`]).
    pub failure: Option<Failure>,
    /// For a non-ok answer: the wait its headers asked for, in ms.
    pub server_wait_ms: Option<f64>,
}

/// What happened, as the host tells it ([`Read::handle`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Input<'a> {
    /// The read begins: the first attempt.
    Start,
    /// The current attempt's answer arrived.
    Head(Head<'a>),
    /// The current attempt's body gave a chunk; `progress`: the caller's own
    /// predicate's answer (`None`: the core's rule, invariant 3).
    Chunk {
        /// The chunk's bytes.
        bytes: &'a [u8],
        /// The caller's predicate, when given.
        progress: Option<bool>,
    },
    /// The current attempt's body, which is not an event stream, gave a
    /// chunk of `len` bytes: the machine needs only their count there (on an
    /// event stream it needs the bytes: out of order, ignored).
    Counted {
        /// The chunk's length in bytes.
        len: usize,
        /// The caller's predicate, when given.
        progress: Option<bool>,
    },
    /// The current attempt's body ended.
    End,
    /// The timer armed by the last [`Action::Wake`] fired.
    Wake,
    /// The current attempt failed (a network error, a hook's answer that
    /// threw, a body's error), classified by the host, and the wait its
    /// answer asked for, if any.
    Failed {
        /// How it failed.
        failure: Failure,
        /// The wait the upstream asked for, in ms.
        server_wait_ms: Option<f64>,
    },
    /// The resume hook gave no continuation.
    HookDeclined,
    /// A chunk read ahead waits for the reader: nobody waits on the source.
    Hold,
    /// The reader reads again.
    Unhold,
    /// The reader cancelled.
    Cancel,
    /// The deadline (`deadline`) or the caller's signal ended the read.
    Aborted {
        /// The deadline's own expiry.
        deadline: bool,
    },
}

/// How an attempt is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// As it was: nothing reached the reader.
    Plain,
    /// With this `Last-Event-ID` (the id's text; its UTF-8 bytes go on the wire).
    LastEventId(String),
    /// By the caller's hook, told what the reader has: `bytes` delivered (on
    /// a body that is not an event stream, the `Range` start the hook asks
    /// for) and the last event id, if any.
    Hook {
        /// Bytes delivered.
        bytes: u64,
        /// The last event id the reader got.
        last_event_id: Option<String>,
    },
}

/// What the host does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Make attempt `attempt`, `how`.
    Connect {
        /// Its number, from 1.
        attempt: u32,
        /// How.
        how: How,
    },
    /// Abort the current attempt's request (it failed, or the read ended).
    Abort,
    /// Hand the next `len` bytes held ([`Action::Keep`]) to the reader, as
    /// one piece when `join` (a reader gets whole events per read), else in
    /// the pieces they were read in, back to back: a delivery longer than
    /// the default event cap ([`JOIN_MAX`]: possible only with raised caps)
    /// is not copied again.
    Deliver {
        /// How many bytes.
        len: usize,
        /// Whether they go as one piece.
        join: bool,
    },
    /// Drop the next this many bytes held: a failed attempt's unfinished
    /// event, a later body's byte-order mark, a replayed stream.
    Discard(usize),
    /// Hold the chunk just reported ([`Input::Chunk`]) after those held: a
    /// later [`Action::Deliver`] or [`Action::Discard`] takes its bytes.
    Keep,
    /// Hand the chunk just reported ([`Input::Chunk`]) to the reader as it
    /// came: the common case (a body that is not an event stream, or a chunk
    /// of whole events, nothing held before it).
    DeliverChunk,
    /// Arm the one timer for `at_ms` (replacing the armed one; `∞`: disarm).
    Wake {
        /// The instant.
        at_ms: f64,
    },
    /// The read is over.
    End(Ending),
}

/// How a read ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The body ended: the reader is done.
    Done,
    /// Before any body was read, a non-ok answer that is not retried (or an
    /// answer without a body): the host hands it back as it is.
    HandBack,
    /// The reader cancelled.
    Cancelled,
    /// The read failed: the reader's error (boxed: an action stays small, so
    /// moving one per chunk copies a few words).
    Failed(Box<ReadFailure>),
}

/// A failed read: the reader's error and what a public client is told.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFailure {
    /// The error.
    pub error: ReadError,
    /// Bytes the reader got; `None` before a body was read (the error then
    /// goes to the caller as it is, without the field).
    pub delivered_bytes: Option<f64>,
}

/// What ended an attempt, as the reader's error names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cause {
    /// The stall watcher's verdict (`StreamStalled`).
    Stalled {
        /// `first-byte`, `first-chunk` or `stall`.
        phase: &'static str,
        /// The silence observed, in ms.
        after_ms: f64,
        /// Chunks of the attempt.
        chunks: f64,
        /// Their bytes.
        bytes: f64,
    },
    /// A non-ok answer (`UpstreamStatus`).
    Status(u16),
    /// A resumed answer that cannot continue the stream (`ResumeRefused`):
    /// `not-event-stream`, `not-partial` or `range-mismatch`, and its status.
    Refused(&'static str, u16),
    /// The host's own error (a network error, a body's): the host holds it.
    Host,
}

/// The reader's error when a read fails.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// The stream stalled (`StreamStalled`).
    Stalled(Cause),
    /// The deadline passed (the deadline's `DeadlineExceeded`, as it is).
    Deadline,
    /// The caller's signal aborted (its reason, as it is).
    Aborted,
    /// An event or a line past its cap (`StreamTooLarge`).
    TooLarge {
        /// Which cap.
        refusal: CutRefusal,
        /// The cap, in bytes.
        max_bytes: f64,
    },
    /// Before the body: the last attempt's failure, as it is.
    Last(Cause),
    /// After the body began: `RetryFailed` with `reason` (the retry loop's
    /// stop, or [`NOT_RESUMABLE`]) and the last failure as its cause.
    RetryFailed {
        /// The stable word.
        reason: &'static str,
        /// The sentence.
        message: Message,
        /// The last attempt's failure.
        cause: Cause,
    },
}

impl ReadError {
    /// The error's class in both hosts.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Stalled(_) | Self::Last(Cause::Stalled { .. }) => "StreamStalled",
            Self::Deadline => "DeadlineExceeded",
            Self::Aborted => "AbortError",
            Self::TooLarge { .. } => "StreamTooLarge",
            Self::Last(Cause::Status(_)) => "UpstreamStatus",
            Self::Last(Cause::Refused(..)) => "ResumeRefused",
            Self::Last(Cause::Host) => "Error",
            Self::RetryFailed { .. } => "RetryFailed",
        }
    }

    /// What tells it apart within its class: a stall's phase, a
    /// `RetryFailed`'s reason, a cap's code, a refusal's word, a status; `-`
    /// for none.
    pub fn detail(&self) -> String {
        match *self {
            Self::Stalled(Cause::Stalled { phase, .. }) | Self::Last(Cause::Stalled { phase, .. }) => phase.into(),
            Self::RetryFailed { reason, .. } => reason.into(),
            Self::TooLarge { refusal, .. } => refusal.code().into(),
            Self::Last(Cause::Refused(code, _)) => code.into(),
            Self::Last(Cause::Status(status)) => status.to_string(),
            _ => "-".into(),
        }
    }

    /// Its message where the core writes it (the host's own errors keep theirs).
    pub fn message(&self) -> Option<String> {
        match *self {
            Self::Stalled(Cause::Stalled { phase, after_ms, chunks, bytes })
            | Self::Last(Cause::Stalled { phase, after_ms, chunks, bytes }) => {
                Some(stalled(phase, after_ms, chunks, bytes).to_string())
            }
            Self::TooLarge { refusal, max_bytes } => Some(refusal.message(max_bytes).to_string()),
            Self::RetryFailed { ref message, .. } => Some(message.to_string()),
            _ => None,
        }
    }

    /// What a public client is told (a relay's fallback): our status, code
    /// and words, never an upstream's text.
    pub fn fallback(&self) -> FallbackAnswer {
        let (cause, phase) = match *self {
            Self::Stalled(Cause::Stalled { phase, .. }) | Self::Last(Cause::Stalled { phase, .. }) => {
                (FallbackCause::Stalled, Some(phase))
            }
            Self::Deadline => (FallbackCause::Deadline, None),
            Self::RetryFailed { reason, .. } => (FallbackCause::of_retry(reason), None),
            _ => (FallbackCause::Failed, None),
        };
        fallback_answer(cause, FallbackScope::Relay, phase, false, self.message().as_deref())
    }
}

/// Where the read is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before [`Input::Start`].
    New,
    /// An attempt's request is out: waiting for its head.
    Connecting,
    /// An attempt's body is being read.
    Reading,
    /// Between attempts: the armed wake starts the next.
    Backoff,
    /// Over.
    Ended,
}

/// Why the current attempt failed, for [`Read::fail`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Why {
    Stall(Cause),
    Replay,
    Error(Failure, Option<f64>, Cause),
}

/// One streamed read (see the module doc).
#[derive(Debug)]
pub struct Read {
    o: ReadOptions,
    run: RetryRun,
    resume: Resume,
    state: State,
    how: How,
    actions: VecDeque<Action>,
    /// When the current attempt started.
    t0: f64,
    watcher: Option<StallWatcher>,
    notes: Notes,
    /// The current body is an event stream; `first_sse`: the first body read was.
    sse: bool,
    first_sse: Option<bool>,
    /// The progress scan of an event stream's body (its line and leading byte-order mark).
    scan: SseScan,
    cut: EventCut,
    events: Vec<Event>,
    ids: DeliveredIds,
    last_id: String,
    /// A resumed-by-id stream is held until its first event with an id:
    /// `held` bytes of events so far.
    verifying: bool,
    held: usize,
    /// The bytes the host holds ([`Action::Keep`]) that it was not told to deliver or discard yet.
    kept: usize,
    /// What reached the reader.
    content: bool,
    bytes: f64,
    last: Option<Cause>,
}

impl Read {
    /// A read of `o`, whose attempts the retry loop `run` allows.
    pub fn new(o: ReadOptions, run: RetryRun) -> Self {
        Self {
            o,
            run,
            resume: Resume::new(o.hook),
            state: State::New,
            how: How::Plain,
            actions: VecDeque::new(),
            t0: 0.0,
            watcher: None,
            notes: Notes::default(),
            sse: false,
            first_sse: None,
            scan: SseScan::new(),
            cut: EventCut::with_caps(o.max_event_bytes, o.max_line_bytes),
            events: Vec::new(),
            ids: DeliveredIds::default(),
            last_id: String::new(),
            verifying: false,
            held: 0,
            kept: 0,
            content: false,
            bytes: 0.0,
            last: None,
        }
    }

    /// The next action, until there is none.
    pub fn poll(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Bytes that reached the reader.
    pub fn delivered_bytes(&self) -> f64 {
        self.bytes
    }

    /// Whether content reached the reader (an event with a field, or a byte of another body).
    pub fn content(&self) -> bool {
        self.content
    }

    /// Whether the read is over.
    pub fn ended(&self) -> bool {
        self.state == State::Ended
    }

    /// The retry loop (its records, for the reader's `RetryFailed`).
    pub fn run(&self) -> &RetryRun {
        &self.run
    }

    /// What ended the last failed attempt (the host builds its error from it
    /// to abort the attempt's request with, and the reader's error's cause).
    pub fn last_cause(&self) -> Option<Cause> {
        self.last
    }

    /// Whether the stall watcher samples (a burst, src/core/stall.rs
    /// invariant 10): a chunk's time is not read (see the module doc).
    pub fn sampling(&self) -> bool {
        self.state == State::Reading && self.watcher.as_ref().is_some_and(StallWatcher::sampling)
    }

    /// Whether every id delivered is remembered ([`DeliveredIds::checkable`]):
    /// a resume by id can still be checked for a replay.
    pub fn ids_checkable(&self) -> bool {
        self.ids.checkable()
    }

    /// Tells the machine what happened at `now_ms`; `budget`: the shared
    /// retry budget the read's retries draw on, if any. Then [`poll`](Self::poll).
    #[inline(never)]
    pub fn handle(&mut self, input: Input<'_>, now_ms: f64, budget: Option<&mut RetryBudget>) {
        match (self.state, input) {
            (State::Ended, _) => {}
            (State::New, Input::Start) => self.start(now_ms, budget),
            (_, Input::Cancel) => {
                self.abort_run(now_ms, false);
                self.end(Ending::Cancelled);
            }
            (_, Input::Aborted { deadline }) => {
                self.abort_run(now_ms, deadline);
                let error = if deadline { ReadError::Deadline } else { ReadError::Aborted };
                self.end_with(error);
            }
            (State::Backoff, Input::Wake) => self.start(now_ms, budget),
            (State::Connecting | State::Reading, Input::Wake) => {
                let notes = self.notes;
                let step = self.watcher.as_mut().map(|w| w.on_wake(&notes, now_ms));
                self.step(step, now_ms, budget);
            }
            (State::Connecting, Input::Head(head)) => self.head(head, now_ms, budget),
            (State::Connecting | State::Reading, Input::Failed { failure, server_wait_ms }) => {
                self.fail(Why::Error(failure, server_wait_ms, Cause::Host), now_ms, budget);
            }
            (State::Connecting, Input::HookDeclined) if self.how != How::Plain => {
                let cause = self.last.unwrap_or(Cause::Host);
                self.end_failed(None, cause);
            }
            (State::Reading, Input::Chunk { bytes, progress }) => self.chunk(bytes, progress, now_ms, budget),
            (State::Reading, Input::Counted { len, progress }) if !self.sse => {
                self.note(len, progress.unwrap_or(len > 0), now_ms);
                self.plain(len);
            }
            (State::Reading, Input::End) => self.finish(now_ms),
            (State::Reading, Input::Hold) => self.notes.hold(now_ms),
            (State::Reading, Input::Unhold) => {
                self.notes.resume(now_ms);
                if self.watcher.as_ref().is_some_and(StallWatcher::parked) {
                    let notes = self.notes;
                    let step = self.watcher.as_mut().map(|w| w.on_resume(&notes, now_ms));
                    self.step(step, now_ms, budget);
                }
            }
            // Anything else is out of order for this state (a late event of a dropped attempt): ignored.
            _ => {}
        }
    }

    /// Asks the retry loop for the next attempt, and makes it.
    #[inline(never)]
    fn start(&mut self, now_ms: f64, mut budget: Option<&mut RetryBudget>) {
        match self.run.start(now_ms, budget.as_deref_mut()) {
            Ok(Start::Attempt { number, .. }) => {
                self.t0 = now_ms;
                self.state = State::Connecting;
                self.notes = Notes::default();
                self.actions.push_back(Action::Connect { attempt: number, how: self.how.clone() });
                // The wait for headers: `firstByteMs`, else (a relay's) what the first-chunk wait allows.
                let headers_ms = match self.o.first_byte_ms {
                    Some(ms) => Some(ms),
                    None if self.o.from_headers => None,
                    None => Some(self.first_chunk_ms(now_ms)),
                };
                let config = StallConfig::new(headers_ms.unwrap_or(NO_LIMIT), NO_LIMIT, Some(self.o.deadline_at));
                self.watch(config, now_ms, now_ms, budget);
            }
            Ok(Start::Stop(reason)) => match self.last {
                Some(cause) => self.end_failed(Some(reason), cause),
                None => {
                    let message = self.run.stopped().map_or_else(|| reason.message(), |s| s.message());
                    self.end_with(ReadError::RetryFailed { reason: reason.code(), message, cause: Cause::Host });
                }
            },
            Err(_) => self.end_with(ReadError::Deadline),
        }
    }

    /// The first-chunk wait of an attempt that starts waiting at `from`.
    fn first_chunk_ms(&self, from: f64) -> f64 {
        self.o.first_chunk_ms.unwrap_or_else(|| default_first_chunk_ms(Some(self.o.deadline_at), from))
    }

    /// A watcher for the current wait, started at `started_at`; its first step.
    #[inline(never)]
    fn watch(
        &mut self,
        config: Result<StallConfig, StallError>,
        started_at: f64,
        now_ms: f64,
        budget: Option<&mut RetryBudget>,
    ) {
        let step = config.and_then(|c| StallWatcher::start(c, started_at, now_ms)).map(|(w, step)| {
            self.watcher = Some(w);
            step
        });
        self.step(Some(step), now_ms, budget);
    }

    /// Acts on a watcher's step.
    #[inline(never)]
    fn step(&mut self, step: Option<Result<Step, StallError>>, now_ms: f64, budget: Option<&mut RetryBudget>) {
        match step {
            None => {}
            Some(Ok(Step::Wake { at_ms })) => self.actions.push_back(Action::Wake { at_ms }),
            Some(Ok(Step::Idle)) => self.actions.push_back(Action::Wake { at_ms: f64::INFINITY }),
            Some(Ok(Step::End(Verdict::DeadlineExceeded { .. }))) | Some(Err(_)) => {
                self.abort_run(now_ms, true);
                self.end_with(ReadError::Deadline);
            }
            Some(Ok(Step::End(Verdict::Stalled { phase, after_ms, chunks, bytes }))) => {
                let phase = match (self.state, phase, self.o.first_byte_ms) {
                    (State::Connecting, _, Some(_)) => "first-byte",
                    (_, Phase::Stall, _) => "stall",
                    _ => "first-chunk",
                };
                self.fail(Why::Stall(Cause::Stalled { phase, after_ms, chunks, bytes }), now_ms, budget);
            }
        }
    }

    #[inline(never)]
    fn head(&mut self, head: Head<'_>, now_ms: f64, budget: Option<&mut RetryBudget>) {
        if !(200..300).contains(&head.status) {
            let failure = head.failure.unwrap_or_else(|| status_failure(head.status));
            let mark = self.actions.len();
            self.fail(Why::Error(failure, head.server_wait_ms, Cause::Status(head.status)), now_ms, budget);
            // Before anything was read, an answer that is not retried is the reader's, as it is: not aborted.
            if matches!(self.actions.back(), Some(Action::End(Ending::Failed(f))) if matches!(f.error, ReadError::Last(_)))
            {
                self.actions.truncate(mark);
                self.actions.push_back(Action::Wake { at_ms: f64::INFINITY });
                self.actions.push_back(Action::End(Ending::HandBack));
            }
            return;
        }
        if !head.body {
            if self.first_sse.is_none() {
                self.end(Ending::HandBack);
            } else {
                self.finish(now_ms);
            }
            return;
        }
        if self.how != How::Plain {
            let by_id = matches!(self.how, How::LastEventId(_));
            let start = head.content_range.and_then(content_range_start);
            let first_sse = self.first_sse.unwrap_or(false);
            if let Some(code) = resume_refusal(by_id, first_sse, head.status, head.event_stream, start, self.bytes) {
                // A resume must continue where the reader is: else a failed attempt, never spliced.
                self.fail(Why::Error(Failure::Ambiguous, None, Cause::Refused(code, head.status)), now_ms, budget);
                return;
            }
        }
        self.state = State::Reading;
        self.sse = head.event_stream;
        self.first_sse.get_or_insert(head.event_stream);
        self.scan = SseScan::new();
        self.verifying = matches!(self.how, How::LastEventId(_));
        let started = if self.o.first_byte_ms.is_none() && !self.o.from_headers { self.t0 } else { now_ms };
        let first = self.first_chunk_ms(started);
        let config = StallConfig::new(first, self.o.stall_ms.unwrap_or(NO_LIMIT), Some(self.o.deadline_at));
        self.watch(config, started, now_ms, budget);
    }

    #[inline(never)]
    fn chunk(&mut self, chunk: &[u8], progress: Option<bool>, now_ms: f64, budget: Option<&mut RetryBudget>) {
        let counts = progress.unwrap_or_else(|| if self.sse { self.scan.bytes(chunk) } else { !chunk.is_empty() });
        self.note(chunk.len(), counts, now_ms);
        if !self.sse {
            return self.plain(chunk.len());
        }
        // Nothing held before it: a chunk of whole events is delivered as it came.
        let whole = self.kept == 0;
        let mut events = std::mem::take(&mut self.events);
        let refused = self.cut.push(chunk, &mut events).err();
        let dropped = self.cut.dropped();
        let mut out = 0;
        let mut replayed = false;
        for event in events.drain(..) {
            if self.verifying {
                let new_id = match event.id.as_deref() {
                    Some(id) if !id.is_empty() => Some(!self.ids.contains(id)),
                    _ => None,
                };
                match new_id {
                    Some(false) => {
                        replayed = true;
                        break;
                    }
                    Some(true) => {
                        // The resumed stream's first id is new: what was held goes to the reader.
                        self.verifying = false;
                        out += std::mem::take(&mut self.held);
                    }
                    None => {
                        self.held += event.len;
                        continue;
                    }
                }
            }
            if let Some(id) = event.id {
                if !id.is_empty() {
                    self.ids.record(&id);
                }
                let old = std::mem::replace(&mut self.last_id, id);
                self.cut.recycle_id(old);
            }
            self.content |= event.content;
            out += event.len;
        }
        self.events = events;
        if out > 0 {
            self.bytes += out as f64;
        }
        if whole && dropped == 0 && out == chunk.len() {
            if out > 0 {
                self.actions.push_back(Action::DeliverChunk);
            }
        } else {
            self.actions.push_back(Action::Keep);
            self.kept += chunk.len();
            self.discard(dropped);
            if out > 0 {
                self.deliver(out);
            }
        }
        if replayed {
            self.fail(Why::Replay, now_ms, budget);
        } else if let Some(refusal) = refused {
            self.abort_run(now_ms, false);
            let max_bytes = match refusal {
                CutRefusal::EventTooLarge => self.o.max_event_bytes,
                CutRefusal::LineTooLong => self.o.max_line_bytes,
            };
            self.end_with(ReadError::TooLarge { refusal, max_bytes: max_bytes as f64 });
        }
    }

    /// Tells the host to hand the next `n` bytes it holds to the reader.
    fn deliver(&mut self, n: usize) {
        self.actions.push_back(Action::Deliver { len: n, join: n <= JOIN_MAX });
        self.kept -= n;
    }

    /// Tells the host to drop the next `n` bytes it holds.
    fn discard(&mut self, n: usize) {
        if n > 0 {
            self.actions.push_back(Action::Discard(n));
            self.kept -= n;
        }
    }

    /// A chunk of `len` bytes for the stall watcher's notes (`counts`: it is progress).
    fn note(&mut self, len: usize, counts: bool, now_ms: f64) {
        let sampling = self.watcher.as_ref().is_some_and(StallWatcher::sampling);
        let burst = self.notes.chunk(Some(len as f64), counts, sampling, || now_ms);
        if let (Some(t), Some(w)) = (burst, self.watcher.as_mut()) {
            if let Some(at_ms) = w.on_burst(self.notes.progress, t) {
                self.actions.push_back(Action::Wake { at_ms });
            }
        }
    }

    /// A chunk of a body that is not an event stream: content as it came.
    fn plain(&mut self, len: usize) {
        if len > 0 {
            self.content = true;
            self.bytes += len as f64;
            self.actions.push_back(Action::DeliverChunk);
        }
    }

    /// The body ended: what an unfinished event or a held stream had goes too, as it came.
    #[inline(never)]
    fn finish(&mut self, now_ms: f64) {
        self.held = 0;
        self.cut.take_rest();
        let rest = self.kept;
        if rest > 0 {
            self.bytes += rest as f64;
            self.deliver(rest);
        }
        let _ = self.run.succeeded(now_ms);
        self.end(Ending::Done);
    }

    /// The current attempt failed: abort it, ask the retry loop, then the
    /// resume rule; make the next attempt (now or after a wait) or end.
    #[inline(never)]
    fn fail(&mut self, why: Why, now_ms: f64, mut budget: Option<&mut RetryBudget>) {
        self.actions.push_back(Action::Abort);
        self.watcher = None;
        if self.state == State::Reading {
            self.cut.drop_partial();
            self.held = 0;
            self.discard(self.kept);
            self.verifying = false;
        }
        self.state = State::Backoff;
        let (how, wait, cause) = match why {
            Why::Stall(cause) => (AttemptFailure::Timeout, None, cause),
            Why::Replay => {
                self.resume.replayed();
                (AttemptFailure::Error(Failure::NotApplied), None, self.last.unwrap_or(Cause::Host))
            }
            Why::Error(f, wait, cause) => (AttemptFailure::Error(f), wait, cause),
        };
        self.last = Some(cause);
        let delay = match self.run.attempt_failed_waiting(now_ms, how, wait, budget.as_deref_mut()) {
            Ok(AfterFailure::Backoff { delay_ms }) => delay_ms,
            Ok(AfterFailure::Stop(reason)) => return self.end_failed(Some(reason), cause),
            Err(_) => return self.end_failed(None, cause),
        };
        let delivered = Delivered {
            content: self.content,
            event_stream: self.first_sse.unwrap_or(false),
            last_event_id: !self.last_id.is_empty(),
            unchecked: !self.ids.checkable(),
        };
        let (next, wait_ms) = self.resume.after_failure(delivered, delay, wait);
        self.how = match next {
            Next::Retry => How::Plain,
            Next::LastEventId => How::LastEventId(self.last_id.clone()),
            Next::Hook => How::Hook {
                bytes: self.bytes as u64,
                last_event_id: (!self.last_id.is_empty()).then(|| self.last_id.clone()),
            },
            Next::End => return self.end_failed(None, cause),
        };
        if wait_ms > 0.0 {
            self.actions.push_back(Action::Wake { at_ms: now_ms + wait_ms });
        } else {
            self.start(now_ms, budget);
        }
    }

    /// The read ends with `cause`; `stop`: the retry loop's reason, when it stopped.
    #[inline(never)]
    fn end_failed(&mut self, stop: Option<StopReason>, cause: Cause) {
        let error = match (self.first_sse, cause) {
            (None, cause) => ReadError::Last(cause),
            (Some(_), Cause::Stalled { .. }) => ReadError::Stalled(cause),
            (Some(_), cause) => match (stop, self.run.stopped()) {
                (Some(_), Some(s)) => ReadError::RetryFailed { reason: s.code(), message: s.message(), cause },
                (Some(reason), None) => {
                    ReadError::RetryFailed { reason: reason.code(), message: reason.message(), cause }
                }
                (None, _) => {
                    ReadError::RetryFailed { reason: NOT_RESUMABLE, message: not_resumable(self.bytes), cause }
                }
            },
        };
        self.end_with(error);
    }

    #[inline(never)]
    fn end_with(&mut self, error: ReadError) {
        let delivered_bytes = match error {
            ReadError::Deadline | ReadError::Aborted | ReadError::Last(_) => None,
            _ if self.first_sse.is_none() => None,
            _ => Some(self.bytes),
        };
        self.end(Ending::Failed(Box::new(ReadFailure { error, delivered_bytes })));
    }

    #[inline(never)]
    fn end(&mut self, ending: Ending) {
        if matches!(self.state, State::Connecting | State::Reading)
            && !matches!(ending, Ending::Done | Ending::HandBack)
        {
            self.actions.push_back(Action::Abort);
        }
        if self.watcher.take().is_some() || self.state == State::Backoff {
            self.actions.push_back(Action::Wake { at_ms: f64::INFINITY });
        }
        self.state = State::Ended;
        self.actions.push_back(Action::End(ending));
    }

    /// The deadline or a signal stopped the loop (already stopped: nothing to record).
    fn abort_run(&mut self, now_ms: f64, deadline: bool) {
        if !self.run.is_done() {
            let _ = self.run.aborted(now_ms, deadline);
        }
    }
}

#[doc(hidden)]
pub mod script;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
