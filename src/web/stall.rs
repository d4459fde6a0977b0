//! Stall detection for `ReadableStream`s, and `fetch` bounded by a deadline.
//!
//! The JavaScript wrapper's semantics (`js/stall.js`), on web-sys objects.
//! Which limit applies, when to wake, what a hold, a burst or a late wake
//! change and whether the stream has stalled is the core's stall watcher
//! ([`crate::core::stall::StallWatcher`], the machine `js/stall.js` drives
//! too; its module doc lists the machine's invariants). This file owns the
//! stream plumbing, one wake-up, the hold on the process, settling once, and
//! the notes.
//!
//! # The per-chunk path
//! The wrapper reads the source's reader one chunk ahead of its consumer.
//! Per chunk it writes the core's [`Notes`] (counts, and for progress chunks
//! a clock reading and the burst counter): no wake-up moves. The pull, the
//! read and the enqueue are a few lines of JavaScript (`stallSource` below)
//! that call into Rust once per chunk. Its one wake-up is armed for the
//! machine's wake instant and re-armed only when the machine says so.
//!
//! # Invariants (the host's)
//! 1. One `child` (timers.rs) per wrapped stream: its wake-up is the
//!    stream's one timer, its parents are the signals it follows. It is
//!    disposed the moment the stream settles (closes, errors or is
//!    cancelled): no wake-up and no listener of it is left.
//! 2. The wrapper settles once. On a stall or the deadline it errors with
//!    `StreamStalled` or `DeadlineExceeded` (branded JavaScript errors); when
//!    `is_progress` fails, with that error; when a followed signal aborts (the
//!    deadline's, which carries its parents, or the controller's), with its
//!    reason; when the source errors, with the source's error, unless a
//!    followed signal has aborted (then with that signal's reason). In each
//!    case the upstream `AbortController` is aborted with the same reason and
//!    the source cancelled with it. A consumer's `cancel(reason)` reaches the
//!    source and the controller. A normal close aborts nothing.
//! 3. The wrapper keeps the chunk it read ahead itself: the stream has no
//!    queue of its own (high-water mark 0), so it is pulled only when a read
//!    waits. One read on the source is in flight from the start, or one chunk
//!    is held: no read asked for it yet ([`Notes::hold`] until the pull that
//!    takes it, [`Notes::resume`]); the machine decides what that time means.
//!    A source that ends or errors is seen at once, read or not.
//! 4. The wrapper keeps Node and Deno alive (a timers.rs `KeepAlive`, since
//!    queue timers are unref'd) while a read waits on the source and a
//!    wake-up is pending. The hold is taken when a read starts waiting and
//!    looked at again when a chunk is held, when the machine is asked and
//!    when the stream settles, not when a chunk answers a read (as
//!    js/stall.js: a ref toggle per chunk costs 250 ns a pair in Deno). A
//!    wrapper nobody reads holds nothing.
//! 5. When the wrapper settles it lets go of every JavaScript object it held
//!    (reader, controllers, predicate), so nothing of it stays reachable from
//!    Rust.
//! 6. On a `text/event-stream` body only events are progress by default
//!    ([`sse_progress`](super::sse_progress)): [`fetch_with_deadline`] reads
//!    the response's content type, [`StallOptions::content_type`] tells
//!    [`with_stall_timeout`]. An `is_progress` given decides instead.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, AbortSignal, Headers, ReadableStream, ReadableStreamDefaultController,
    ReadableStreamDefaultReader, Request, RequestInit, Response, ResponseInit,
};

use super::errors::StallPhase;
use super::headers::HeaderFormat;
use super::resume::{ResumeFn, Resumed};
use super::retry::RetryOptions;
use super::sse::{is_event_stream, sse_progress};
use super::timers::{child, Child, KeepAlive, Parent, Parents, Timeout};
use super::{sys, Deadline, Error};
use crate::core::headers;
use crate::core::stall::{
    default_first_chunk_ms, Decision, Notes, Phase, Snapshot, StallConfig, StallError, StallWatcher, Step, Verdict,
    NO_LIMIT,
};

/// Decides whether a chunk is progress (the default: any chunk of non-zero size).
pub type ProgressFn = Box<dyn FnMut(&JsValue) -> Result<bool, Error>>;

/// The limits of [`with_stall_timeout`].
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{Deadline, StallOptions};
/// let deadline = Deadline::in_ms(30_000.0)?;
/// let upstream = web_sys::AbortController::new().unwrap();
/// let options = StallOptions::new(5_000.0, 9_000.0).deadline(&deadline).controller(upstream);
/// # let _ = options; Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
pub struct StallOptions {
    first_chunk_ms: f64,
    stall_ms: f64,
    at: Option<f64>,
    followed: Vec<AbortSignal>,
    controller: Option<AbortController>,
    is_progress: Option<ProgressFn>,
    event_stream: bool,
}

impl StallOptions {
    /// `first_chunk_ms`: the longest wait for the first progress chunk (0 is
    /// accepted: nothing was left to wait, so the stream stalls at once);
    /// `stall_ms`: the longest silence between progress chunks (> 0). Both
    /// are checked by [`with_stall_timeout`] (finite, ≤ 2^53 − 1).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::StallOptions;
    /// let options = StallOptions::new(5_000.0, 9_000.0);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(first_chunk_ms: f64, stall_ms: f64) -> Self {
        Self {
            first_chunk_ms,
            stall_ms,
            at: None,
            followed: Vec::new(),
            controller: None,
            is_progress: None,
            event_stream: false,
        }
    }

    /// Also end the stream at `deadline`'s instant (with `DeadlineExceeded`),
    /// or when its signal aborts (a parent such as a client that left), with
    /// that signal's reason.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, StallOptions};
    /// let options = StallOptions::new(500.0, 500.0).deadline(&Deadline::in_ms(2_000.0)?);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn deadline(mut self, deadline: &Deadline) -> Self {
        self.at = Some(deadline.instant_ms());
        self.followed.push(deadline.signal());
        self
    }

    /// The upstream request's controller: aborted with the stream's error, so
    /// the request is released, not abandoned. When someone else aborts it,
    /// the stream ends with its reason.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::StallOptions;
    /// let upstream = web_sys::AbortController::new().unwrap();
    /// let options = StallOptions::new(500.0, 500.0).controller(upstream);
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn controller(mut self, controller: AbortController) -> Self {
        self.followed.push(controller.signal());
        self.controller = Some(controller);
        self
    }

    /// Which chunks count as progress (for example, only complete SSE events
    /// and not keep-alive comments). An `Err` fails the stream with it.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::StallOptions;
    /// let options = StallOptions::new(500.0, 500.0)
    ///     .is_progress(|chunk| Ok(chunk.as_string().map_or(true, |s| !s.starts_with(':'))));
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn is_progress(mut self, f: impl FnMut(&JsValue) -> Result<bool, Error> + 'static) -> Self {
        self.is_progress = Some(Box::new(f));
        self
    }

    /// The body's `content-type`: on `text/event-stream` only events are
    /// progress ([`sse_progress`](super::sse_progress)) unless
    /// [`is_progress`](Self::is_progress) says otherwise; keep-alive comments
    /// are silence.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::StallOptions;
    /// let options = StallOptions::new(500.0, 500.0).content_type("text/event-stream; charset=utf-8");
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn content_type(mut self, content_type: &str) -> Self {
        self.event_stream = is_event_stream(content_type);
        self
    }
}

impl std::fmt::Debug for StallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StallOptions")
            .field("first_chunk_ms", &self.first_chunk_ms)
            .field("stall_ms", &self.stall_ms)
            .field("deadline_at", &self.at)
            .field("controller", &self.controller.is_some())
            .field("is_progress", &self.is_progress.is_some())
            .field("event_stream", &self.event_stream)
            .finish()
    }
}

// The stream plumbing, in JavaScript: the source reads the source's reader
// one chunk ahead and enqueues, and calls Rust once per chunk
// (`onChunk(chunk, size, waiting)`, which does the bookkeeping, notes a hold
// when no read waits, and says whether to pass the chunk on), when a held
// chunk is taken (`onResume`), and when a read starts waiting while the
// process is not held (`onWait`). `flags` is shared: the pull writes
// `waiting` (a read waits on the source), Rust writes `kept` (the process is
// held), so a consumer reading in a loop costs one call into Rust per chunk.
// Pulling, unpacking the read and enqueueing from Rust cost four more
// boundary crossings per chunk, which measured 2.1x the JavaScript
// wrapper's per-chunk cost in Deno (bench/web.bench.mjs). The size is
// `byteLength`, a string's length, 0 for null/undefined, or -1 when the chunk
// has none.
#[wasm_bindgen(inline_js = r#"
export function stallSource(reader, flags, onStart, onChunk, onDone, onError, onWait, onResume, onCancel) {
  const size = (v) => (v == null ? 0 : typeof v === "string" ? v.length : typeof v.byteLength === "number" ? v.byteLength : -1);
  let out;
  let ahead = false; // a chunk read ahead waits for a read (invariant 3)
  let held;
  flags.waiting = false;
  flags.kept = false;
  const readAhead = () => reader.read().then((r) => {
    if (r.done) return onDone();
    const v = r.value;
    if (!onChunk(v, size(v), flags.waiting)) return;
    if (!flags.waiting) {
      ahead = true;
      held = v;
      return;
    }
    flags.waiting = false;
    out.enqueue(v);
    readAhead();
  }, onError);
  // A source error ends the wrapper at once, even with a chunk held and nobody reading.
  reader.closed.then(undefined, onError);
  return new ReadableStream({
    start(c) {
      out = c;
      if (onStart(c)) readAhead();
    },
    pull() {
      if (!ahead) {
        flags.waiting = true;
        if (!flags.kept) onWait();
        return;
      }
      const v = held;
      ahead = false;
      held = undefined;
      if (!onResume()) return;
      out.enqueue(v);
      readAhead();
    },
    cancel(reason) {
      ahead = false;
      held = undefined;
      return onCancel(reason);
    },
  }, { highWaterMark: 0 });
}
"#)]
extern "C" {
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = stallSource)]
    fn stall_source(
        reader: &ReadableStreamDefaultReader,
        flags: &Object,
        on_start: &JsValue,
        on_chunk: &JsValue,
        on_done: &JsValue,
        on_error: &JsValue,
        on_wait: &JsValue,
        on_resume: &JsValue,
        on_cancel: &JsValue,
    ) -> ReadableStream;
}

/// The notes and the machine (the core's), and the hold on the process.
struct State {
    notes: Notes,
    machine: StallWatcher,
    /// The process is held (invariant 4), mirrored in `flags.kept`.
    holding: bool,
    /// The hold, where the host has a process to hold.
    keep: Option<KeepAlive>,
}

/// The JavaScript objects the wrapper holds until it settles (invariant 5).
struct Held {
    reader: ReadableStreamDefaultReader,
    /// `{ waiting, kept }`, shared with the JavaScript plumbing.
    flags: Object,
    /// Signals whose abort fails the stream (the deadline's, the controller's).
    followed: Vec<AbortSignal>,
    out: Option<ReadableStreamDefaultController>,
    controller: Option<AbortController>,
    is_progress: Option<ProgressFn>,
    on_settle: Option<Box<dyn FnOnce()>>,
}

struct Watch {
    settled: Cell<bool>,
    state: RefCell<State>,
    held: RefCell<Option<Held>>,
    /// The child (timers.rs `child`): the one wake-up, and the followed
    /// signals as its parents (invariant 1). Made in `start`, dropped
    /// (disposed) when the wrapper settles.
    node: RefCell<Option<Child>>,
}

/// Wraps `stream`: the returned stream carries the same chunks and errors with
/// `StreamStalled` when the source goes quiet for too long (aborting the
/// upstream controller), or with `DeadlineExceeded` at the deadline. The
/// errors are the JavaScript API's branded ones, so `isStreamStalled` in
/// JavaScript and [`Error::from`] in Rust recognise them.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `firstChunkMs`, `stallMs` or `deadline`
/// (checked before the source is locked); [`Error::Js`] with a `TypeError`
/// naming `stream` when the source is already locked.
///
/// ```no_run
/// use edge_deadline::web::{with_stall_timeout, StallOptions};
/// # async fn demo(body: web_sys::ReadableStream) -> Result<(), edge_deadline::web::Error> {
/// let upstream = web_sys::AbortController::new().unwrap();
/// let guarded = with_stall_timeout(body, StallOptions::new(5_000.0, 9_000.0).controller(upstream))?;
/// # let _ = guarded; Ok(()) }
/// ```
pub fn with_stall_timeout(stream: ReadableStream, options: StallOptions) -> Result<ReadableStream, Error> {
    watch(stream, options, None)
}

fn watch(
    stream: ReadableStream,
    options: StallOptions,
    on_settle: Option<Box<dyn FnOnce()>>,
) -> Result<ReadableStream, Error> {
    let config = StallConfig::new(options.first_chunk_ms, options.stall_ms, options.at)?;
    if stream.locked() {
        return Err(Error::Js(
            js_sys::TypeError::new(
                "'stream' of with_stall_timeout must be an unlocked ReadableStream: current value is locked",
            )
            .into(),
        ));
    }
    let t0 = sys::now();
    // The first step validates the instants too, before the source is locked.
    let (machine, first) = StallWatcher::start(config, t0, t0)?;
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let flags = Object::new();
    let watch = Rc::new(Watch {
        settled: Cell::new(false),
        state: RefCell::new(State { notes: Notes::default(), machine, holding: false, keep: None }),
        held: RefCell::new(Some(Held {
            reader: reader.clone(),
            flags: flags.clone(),
            followed: options.followed,
            out: None,
            controller: options.controller,
            is_progress: match options.is_progress {
                None if options.event_stream => Some(Box::new(sse_progress())),
                given => given,
            },
            on_settle,
        })),
        node: RefCell::new(None),
    });

    // The source's functions are owned by the JavaScript stream (reclaimed
    // with it); they hold the watch, the watch holds none of them.
    let on_chunk = {
        let w = watch.clone();
        Closure::<dyn FnMut(JsValue, f64, bool) -> bool>::new(move |chunk: JsValue, size: f64, waiting: bool| {
            w.on_chunk(&chunk, size, waiting)
        })
        .into_js_value()
    };
    let on_wait = {
        let w = watch.clone();
        Closure::<dyn FnMut()>::new(move || w.on_wait()).into_js_value()
    };
    let on_done = {
        let w = watch.clone();
        Closure::<dyn FnMut()>::new(move || w.on_done()).into_js_value()
    };
    let on_error = {
        let w = watch.clone();
        Closure::<dyn FnMut(JsValue)>::new(move |error: JsValue| w.on_read_error(error)).into_js_value()
    };
    let on_resume = {
        let w = watch.clone();
        Closure::<dyn FnMut() -> bool>::new(move || {
            w.resume();
            !w.settled.get()
        })
        .into_js_value()
    };
    let on_start = {
        let w = watch.clone();
        Closure::<dyn FnMut(ReadableStreamDefaultController) -> bool>::new(move |c: ReadableStreamDefaultController| {
            if let Some(held) = w.held.borrow_mut().as_mut() {
                held.out = Some(c);
            }
            w.start();
            if !w.settled.get() {
                w.apply(Ok(first), t0);
            }
            !w.settled.get()
        })
        .into_js_value()
    };
    let on_cancel = {
        let w = watch;
        Closure::<dyn FnMut(JsValue) -> JsValue>::new(move |reason: JsValue| w.cancel(&reason)).into_js_value()
    };
    // The functions are owned by the JavaScript stream (reclaimed with it);
    // they hold the watch, the watch holds none of them.
    Ok(stall_source(&reader, &flags, &on_start, &on_chunk, &on_done, &on_error, &on_wait, &on_resume, &on_cancel))
}

impl Watch {
    /// Makes the child. A parent (a client that left, the caller's signal)
    /// may have aborted already: then `child` fails the wrapper before it returns.
    fn start(self: &Rc<Self>) {
        let followed = self.held.borrow().as_ref().map(|h| h.followed.clone()).unwrap_or_default();
        let parents: Vec<Parent<'_>> = followed.iter().map(Parent::Signal).collect();
        let (on_time, on_abort) = (Rc::downgrade(self), Rc::downgrade(self));
        let node = child(
            Parents::List(&parents),
            f64::INFINITY,
            Some(Box::new(move |_| {
                if let Some(w) = on_time.upgrade() {
                    w.on_timer();
                }
            })),
            Some(Box::new(move |reason, _| {
                if let Some(w) = on_abort.upgrade() {
                    w.fail(reason);
                }
            })),
            None,
        );
        if !self.settled.get() {
            *self.node.borrow_mut() = Some(node);
        }
    }

    /// Moves the one wake-up to `at` (`INFINITY`: none).
    fn arm(&self, at: f64) {
        if let Some(node) = self.node.borrow().as_ref() {
            node.rearm(at);
        }
        self.keep(self.waiting());
    }

    /// Invariant 4: hold the process while a read is `waiting` on the
    /// source and a wake-up is pending.
    fn keep(&self, waiting: bool) {
        let pending = self.node.borrow().as_ref().is_some_and(|n| n.at() < f64::INFINITY);
        let mut s = self.state.borrow_mut();
        let on = pending && !self.settled.get() && waiting;
        if on != s.holding {
            s.holding = on;
            s.keep = if on { KeepAlive::take() } else { None };
            if let Some(h) = self.held.borrow().as_ref() {
                let _ = Reflect::set(&h.flags, &JsValue::from_str("kept"), &JsValue::from_bool(on));
            }
        }
    }

    /// Whether a read waits on the source, as the JavaScript plumbing's
    /// `flags.waiting` says (`false` once settled).
    fn waiting(&self) -> bool {
        let held = self.held.borrow();
        held.as_ref().is_some_and(|h| Reflect::get(&h.flags, &JsValue::from_str("waiting")).ok() == Some(JsValue::TRUE))
    }

    /// Does what the machine said: arm, wait for the consumer, or end the stream.
    fn apply(self: &Rc<Self>, step: Result<Step, StallError>, t: f64) {
        match step {
            Err(error) => self.fail(&Error::from(error).into()),
            Ok(Step::Wake { at_ms }) => self.arm(at_ms),
            Ok(Step::Idle) => self.arm(f64::INFINITY),
            Ok(Step::End(Verdict::DeadlineExceeded { late_by_ms })) => {
                let at = self.state.borrow().machine.config().deadline_at().unwrap_or(t);
                self.fail(&Error::DeadlineExceeded { at, late_by_ms }.into());
            }
            Ok(Step::End(Verdict::Stalled { phase, after_ms, chunks, bytes })) => {
                let phase = if phase == Phase::FirstChunk { StallPhase::FirstChunk } else { StallPhase::Stall };
                self.fail(&Error::StreamStalled { phase, after_ms, chunks, bytes }.into());
            }
        }
    }

    /// The one wake-up came: the machine decides.
    fn on_timer(self: &Rc<Self>) {
        if self.settled.get() {
            return;
        }
        let t = sys::now();
        let step = {
            let mut s = self.state.borrow_mut();
            let State { notes, machine, .. } = &mut *s;
            machine.on_wake(notes, t)
        };
        self.apply(step, t);
    }

    /// A read waits and no chunk is ahead: it waits on the source.
    fn on_wait(&self) {
        self.keep(true);
    }

    /// The consumer reads again after a hold: noted; the machine is asked
    /// only if the timer fired meanwhile (parked).
    fn resume(self: &Rc<Self>) {
        let t = sys::now();
        let step = {
            let mut s = self.state.borrow_mut();
            s.notes.resume(t);
            if !s.machine.parked() {
                return;
            }
            let State { notes, machine, .. } = &mut *s;
            machine.on_resume(notes, t)
        };
        self.apply(step, t);
    }

    /// The reason of the first followed signal that has aborted.
    fn aborted_reason(&self) -> Option<JsValue> {
        let held = self.held.borrow();
        held.as_ref()?.followed.iter().find(|s| s.aborted()).map(AbortSignal::reason)
    }

    /// The source errored. When a followed signal has aborted, its reason is
    /// the cause: some runtimes error an aborted body with an unbranded copy.
    fn on_read_error(&self, error: JsValue) {
        let reason = self.aborted_reason().unwrap_or(error);
        self.fail(&reason);
    }

    fn on_done(self: &Rc<Self>) {
        if self.settled.get() {
            return;
        }
        if let Some(out) = self.settle().and_then(|h| h.out) {
            let _ = out.close();
        }
    }

    /// One chunk read: the bookkeeping, and a hold when no read `waiting`
    /// takes it; `true` to pass it on.
    fn on_chunk(self: &Rc<Self>, chunk: &JsValue, size: f64, waiting: bool) -> bool {
        if self.settled.get() {
            return false;
        }
        let counts = {
            let mut held = self.held.borrow_mut();
            match held.as_mut().and_then(|h| h.is_progress.as_mut()) {
                Some(f) => f(chunk),
                None => Ok(size != 0.0),
            }
        };
        let counts = match counts {
            Ok(c) => c,
            Err(error) => {
                self.fail(&error.into());
                return false;
            }
        };
        let rearm = {
            let mut s = self.state.borrow_mut();
            let State { notes, machine, .. } = &mut *s;
            let size = (size >= 0.0).then_some(size);
            let sampling = machine.sampling();
            let rearm = notes.chunk(size, counts, sampling, sys::now).and_then(|t| machine.on_burst(notes.progress, t));
            // A read answered keeps the hold until the next chunk or wake-up looks again (invariant 4).
            if !waiting {
                s.notes.hold(sys::now());
            }
            rearm
        };
        match rearm {
            Some(at) => self.arm(at),
            None if !waiting => self.keep(false),
            None => {}
        }
        true
    }

    /// Marks the wrapper settled, disposes its child and hands back what it held.
    fn settle(&self) -> Option<Held> {
        self.settled.set(true);
        let node = self.node.borrow_mut().take();
        drop(node);
        let keep = {
            let mut s = self.state.borrow_mut();
            s.holding = false;
            s.keep.take()
        };
        drop(keep);
        let mut held = self.held.borrow_mut().take();
        if let Some(f) = held.as_mut().and_then(|h| h.on_settle.take()) {
            f();
        }
        held
    }

    /// Errors the wrapper, aborts the upstream and cancels the source, all with `reason`.
    fn fail(&self, reason: &JsValue) {
        if self.settled.get() {
            return;
        }
        let Some(held) = self.settle() else { return };
        if let Some(out) = &held.out {
            out.error_with_e(reason);
        }
        if let Some(c) = &held.controller {
            if !c.signal().aborted() {
                c.abort_with_reason(reason);
            }
        }
        ignore_rejection(held.reader.cancel_with_reason(reason));
    }

    fn cancel(&self, reason: &JsValue) -> JsValue {
        if self.settled.get() {
            return JsValue::UNDEFINED;
        }
        let Some(held) = self.settle() else { return JsValue::UNDEFINED };
        // Cancel first: aborting first would error the source, and its cancel would then reject.
        let cancelled = held.reader.cancel_with_reason(reason);
        if let Some(c) = &held.controller {
            if !c.signal().aborted() {
                c.abort_with_reason(reason);
            }
        }
        cancelled.into()
    }
}

pub(super) fn ignore_rejection(promise: Promise) {
    thread_local! {
        static NOOP: JsValue = Closure::<dyn FnMut(JsValue)>::new(|_: JsValue| {}).into_js_value();
    }
    NOOP.with(|noop| {
        promise.unchecked_into::<sys::Thenable>().catch_with(noop.unchecked_ref());
    });
}

// ---- fetch ------------------------------------------------------------------

/// The limits of [`fetch_with_deadline`]. Limits that are not given do not
/// apply (the deadline bounds everything).
///
/// ```
/// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
/// # fn run() -> Result<(), edge_deadline::web::Error> {
/// use edge_deadline::web::{Deadline, FetchOptions};
/// let deadline = Deadline::in_ms(10_000.0)?;
/// let options = FetchOptions::new(&deadline).first_byte_ms(2_000.0).stall_ms(5_000.0);
/// # let _ = options; Ok(())
/// # }
/// # fn main() {}
/// ```
#[must_use]
pub struct FetchOptions<'a> {
    deadline: &'a Deadline,
    first_byte_ms: Option<f64>,
    first_chunk_ms: Option<f64>,
    stall_ms: Option<f64>,
    is_progress: Option<ProgressFn>,
    propagate: Option<Vec<HeaderFormat>>,
    retry: Option<RetryOptions>,
    resume: Option<ResumeFn>,
    max_event_bytes: Option<f64>,
    max_line_bytes: Option<f64>,
}

impl<'a> FetchOptions<'a> {
    /// Bounds the request, its headers and its body by `deadline`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions};
    /// let deadline = Deadline::in_ms(10_000.0)?;
    /// let options = FetchOptions::new(&deadline);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn new(deadline: &'a Deadline) -> Self {
        Self {
            deadline,
            first_byte_ms: None,
            first_chunk_ms: None,
            stall_ms: None,
            is_progress: None,
            propagate: None,
            retry: None,
            resume: None,
            max_event_bytes: None,
            max_line_bytes: None,
        }
    }

    /// The longest wait for the response headers (phase `"first-byte"`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).first_byte_ms(300.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn first_byte_ms(mut self, ms: f64) -> Self {
        self.first_byte_ms = Some(ms);
        self
    }

    /// The longest wait for the first progress chunk, counted from the headers.
    /// Not given: the core's default wait (`default_first_chunk_ms`), half of
    /// what is left of the deadline when the headers arrive and never below
    /// its floor (`FIRST_CHUNK_FLOOR_MS`), so an upstream that only sends
    /// keep-alive comments is cut while a retry still fits.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).first_chunk_ms(500.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn first_chunk_ms(mut self, ms: f64) -> Self {
        self.first_chunk_ms = Some(ms);
        self
    }

    /// The longest silence between progress chunks of the body.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).stall_ms(500.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn stall_ms(mut self, ms: f64) -> Self {
        self.stall_ms = Some(ms);
        self
    }

    /// Which body chunks count as progress (see [`StallOptions::is_progress`]).
    /// Not given, on a `text/event-stream` response only events are progress
    /// ([`sse_progress`](super::sse_progress)): keep-alive comments are
    /// silence. Elsewhere every non-empty chunk is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// # let d = edge_deadline::web::Deadline::in_ms(1_000.0)?;
    /// let options = edge_deadline::web::FetchOptions::new(&d).is_progress(|_chunk| Ok(true));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn is_progress(mut self, f: impl FnMut(&JsValue) -> Result<bool, Error> + 'static) -> Self {
        self.is_progress = Some(Box::new(f));
        self
    }

    /// The propagation headers that tell the upstream what is left of the
    /// deadline (the JavaScript option `propagate`). Each format in `formats`
    /// is sent with the remaining duration at the moment of the call, rounded
    /// down; `&[]` sends none (JavaScript's `propagate: false`). A header the
    /// request already has (in `init`'s headers, or a `Request` input's) is
    /// the caller's and is not overwritten.
    ///
    /// Not called, the package's own header `edge-deadline-remaining-ms` is
    /// sent, except from a browser page or worker to another origin: there a
    /// custom header makes the request preflighted (CORS), and a server that
    /// allows any origin but does not answer `OPTIONS` would fail it. Called,
    /// the formats given are sent anyway, as with `propagate: true` (or header
    /// names) in JavaScript.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, HeaderFormat};
    /// let d = Deadline::in_ms(1_000.0)?;
    /// let grpc = FetchOptions::new(&d).propagate(&[HeaderFormat::GrpcTimeout]);
    /// let none = FetchOptions::new(&d).propagate(&[]);
    /// # let _ = (grpc, none); Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn propagate(mut self, formats: &[HeaderFormat]) -> Self {
        self.propagate = Some(formats.to_vec());
        self
    }

    /// Makes the read recover (JavaScript's `retry`): failures before the
    /// first content are retried inside the deadline and the retry options'
    /// limits, invisibly to the reader; a failure after content resumes the
    /// stream (`Last-Event-ID`, or the [`resume`](Self::resume) hook) or
    /// ends it. See [`Resumed`] and the guide's "Streams that recover".
    ///
    /// For a stream, `idempotent` defaults to true (a read that delivered
    /// nothing can be made again; say `.idempotent(false)` otherwise), and
    /// `attempt_timeout_ms` does not apply: `first_byte_ms`,
    /// `first_chunk_ms`, `stall_ms` and the deadline bound a stream, so
    /// setting it makes [`fetch_with_deadline`] fail with
    /// [`Error::InvalidArgument`] naming `retry.attemptTimeoutMs`. The
    /// retry options' circuit and record do not apply to a stream.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).stall_ms(5_000.0).retry(RetryOptions::new(1_000.0).max_attempts(4));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn retry(mut self, options: RetryOptions) -> Self {
        self.retry = Some(options);
        self
    }

    /// How a stream continues after content was delivered when the upstream
    /// cannot be asked by `Last-Event-ID` (not an event stream, no event id,
    /// or it ignored the header): `hook` gets what was delivered
    /// ([`Resumed`]) and returns a `Promise` of the `Response` whose body
    /// continues the stream, or `None` to end it with the failure. Without
    /// [`retry`](Self::retry), the retry options' defaults apply
    /// (`RetryOptions::new(0.0)`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// # fn fetch_rest(from_byte: f64, signal: &web_sys::AbortSignal) -> js_sys::Promise { unimplemented!() }
    /// // The upstream can continue a body from a byte offset.
    /// let options = FetchOptions::new(&d)
    ///     .retry(RetryOptions::new(500.0))
    ///     .resume(|resumed| Some(fetch_rest(resumed.bytes, &resumed.signal)));
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn resume(mut self, hook: impl FnMut(Resumed) -> Option<Promise> + 'static) -> Self {
        self.resume = Some(Box::new(hook));
        self
    }

    /// With [`retry`](Self::retry) or [`resume`](Self::resume) on an event
    /// stream (whose events are held whole until their blank line): the
    /// longest event, in bytes, counting its line ends (default
    /// [`MAX_EVENT_BYTES`](crate::core::resume::MAX_EVENT_BYTES), at most
    /// 2^30). A longer one ends the stream at once with an error named
    /// `StreamTooLarge` (`.code` `"EVENT_TOO_LARGE"`), never retried. A
    /// value that is not a whole number from 1 fails the fetch (param
    /// `maxEventBytes`).
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).retry(RetryOptions::new(500.0)).max_event_bytes(1_048_576.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_event_bytes(mut self, bytes: f64) -> Self {
        self.max_event_bytes = Some(bytes);
        self
    }

    /// With [`retry`](Self::retry) or [`resume`](Self::resume) on an event
    /// stream: the longest line, in bytes, its end not counted (default
    /// [`MAX_LINE_BYTES`](crate::core::resume::MAX_LINE_BYTES), at most
    /// 2^30). A longer one ends the stream at once with `StreamTooLarge`
    /// (`.code` `"LINE_TOO_LONG"`). Checked as
    /// [`max_event_bytes`](Self::max_event_bytes) is.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() { run().unwrap() }
    /// # fn run() -> Result<(), edge_deadline::web::Error> {
    /// use edge_deadline::web::{Deadline, FetchOptions, RetryOptions};
    /// let d = Deadline::in_ms(30_000.0)?;
    /// let options = FetchOptions::new(&d).retry(RetryOptions::new(500.0)).max_line_bytes(262_144.0);
    /// # let _ = options; Ok(())
    /// # }
    /// # fn main() {}
    /// ```
    pub fn max_line_bytes(mut self, bytes: f64) -> Self {
        self.max_line_bytes = Some(bytes);
        self
    }
}

impl std::fmt::Debug for FetchOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchOptions")
            .field("deadline", self.deadline)
            .field("first_byte_ms", &self.first_byte_ms)
            .field("first_chunk_ms", &self.first_chunk_ms)
            .field("stall_ms", &self.stall_ms)
            .field("is_progress", &self.is_progress.is_some())
            .field("propagate", &self.propagate)
            .field("retry", &self.retry)
            .field("resume", &self.resume.is_some())
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_line_bytes", &self.max_line_bytes)
            .finish()
    }
}

/// Abort listeners from several signals onto one controller, removed on drop.
struct Links {
    upstream: AbortController,
    linked: Vec<(AbortSignal, Closure<dyn FnMut()>)>,
}

impl Links {
    fn link(&mut self, signal: &AbortSignal) {
        if self.upstream.signal().aborted() {
            return;
        }
        if signal.aborted() {
            self.upstream.abort_with_reason(&signal.reason());
            return;
        }
        let (upstream, source) = (self.upstream.clone(), signal.clone());
        let listener = Closure::<dyn FnMut()>::new(move || {
            if !upstream.signal().aborted() {
                upstream.abort_with_reason(&source.reason());
            }
        });
        let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        self.linked.push((signal.clone(), listener));
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        for (signal, listener) in self.linked.drain(..) {
            let _ = signal.remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
    }
}

/// Whether `input` goes to another origin than the browser page's (or browser
/// worker's) own, as js/headers.js `crossOriginInBrowser`: there a header of
/// ours would make the request "not simple", so the browser would send a CORS
/// preflight first. Outside browsers (Node, Deno, workerd: no `location` or
/// no CORS) this is always false.
fn cross_origin_in_browser(input: &JsValue) -> bool {
    if sys::host() != sys::Host::Other || !sys::global(&["process", "versions", "node"]).is_undefined() {
        return false;
    }
    let (Some(origin), Some(base)) =
        (sys::global(&["location", "origin"]).as_string(), sys::global(&["location", "href"]).as_string())
    else {
        return false; // no page: a server runtime
    };
    let href = match (input.as_string(), input.dyn_ref::<Request>()) {
        (Some(href), _) => href,
        (None, Some(request)) => request.url(),
        // A URL object (or anything else `fetch` turns into a string).
        (None, None) => match sys::to_js_string(input) {
            Ok(href) => href,
            Err(_) => return true, // fetch rejects it; add nothing
        },
    };
    match web_sys::Url::new_with_base(&href, &base) {
        Ok(url) => url.origin() != origin,
        Err(_) => true, // not a URL: fetch rejects it; add nothing
    }
}

/// Sets `init`'s headers (a copy: the caller's object is not changed) to the
/// request's headers plus what is left of `deadline` in each of `formats`,
/// read now (js/headers.js `withBudgetHeaders`). The request's headers are
/// `init`'s, or a `Request` input's when `init` has none; a header the caller
/// set is not overwritten.
fn add_budget_headers(
    input: &JsValue,
    init: &RequestInit,
    remaining: f64,
    formats: &[HeaderFormat],
) -> Result<(), Error> {
    if formats.is_empty() {
        return Ok(());
    }
    let own = init.get_headers();
    let out = match (own.is_undefined() || own.is_null(), input.dyn_ref::<Request>()) {
        (false, _) => Headers::new_with_str_sequence_sequence(&own),
        (true, Some(request)) => Headers::new_with_headers(&request.headers()),
        (true, None) => Headers::new(),
    }
    .map_err(Error::Js)?;
    for &format in formats {
        if !out.has(format.name()).map_err(Error::Js)? {
            out.set(format.name(), &headers::encode(format, remaining)?).map_err(Error::Js)?;
        }
    }
    init.set_headers(&out);
    Ok(())
}

/// The wait for headers as a stall configuration: `firstByteMs` as the
/// first-chunk wait (0 is accepted: no time was left, so it stalls at once),
/// the largest gap limit (nothing is ever received), no deadline (the
/// deadline's signal bounds the request). Bad input names `firstByteMs`.
fn first_byte_config(first_byte_ms: f64) -> Result<StallConfig, Error> {
    StallConfig::new(first_byte_ms, NO_LIMIT, None).map_err(|error| match error {
        StallError::Wait { value, .. } => StallError::Wait { param: "firstByteMs", value }.into(),
        other => other.into(),
    })
}

/// The wait for the response headers: the same one-timer loop on the
/// first-byte limit. Dropping the guard clears its timer.
struct FirstByteGuard(Rc<RefCell<Option<Timeout>>>);

impl FirstByteGuard {
    fn start(config: StallConfig, t0: f64, upstream: &AbortController) -> Self {
        let slot = Rc::new(RefCell::new(None));
        Self::step(config, t0, upstream.clone(), &slot);
        Self(slot)
    }

    fn step(config: StallConfig, t0: f64, upstream: AbortController, slot: &Rc<RefCell<Option<Timeout>>>) {
        let t = sys::now();
        let reason = match config.decide(&Snapshot::started(t0), t) {
            Ok(Decision::Wake { delay_ms, .. }) => {
                let next = Rc::downgrade(slot);
                let timer = Timeout::at(
                    t + delay_ms,
                    Box::new(move || {
                        if let Some(slot) = next.upgrade() {
                            Self::step(config, t0, upstream, &slot);
                        }
                    }),
                );
                *slot.borrow_mut() = Some(timer);
                return;
            }
            Ok(Decision::End(Verdict::Stalled { after_ms, .. })) => {
                Error::StreamStalled { phase: StallPhase::FirstByte, after_ms, chunks: 0.0, bytes: 0.0 }
            }
            // No deadline in this configuration; validated inputs cannot fail.
            Ok(Decision::End(Verdict::DeadlineExceeded { .. })) => return,
            Err(e) => e.into(),
        };
        upstream.abort_with_reason(&reason.into());
    }
}

impl Drop for FirstByteGuard {
    fn drop(&mut self) {
        let timer = self.0.borrow_mut().take();
        drop(timer);
    }
}

/// `fetch` (the global one) bounded by a deadline, with a limit on the wait
/// for headers and stall detection on the body. The request's signal is
/// linked to the deadline's signal (and so to its parents), to `init`'s
/// signal and to the signal of a `Request` input; a stall, the deadline or a
/// consumer's cancel aborts the request.
///
/// `input` is a `Request` or a URL string, as for `fetch`. On a
/// `text/event-stream` response only events are progress unless
/// [`FetchOptions::is_progress`] says otherwise: an upstream that only sends
/// keep-alive comments stalls at `stall_ms`.
///
/// The upstream is told what is left of the deadline at the moment of the
/// call: by default in the package's own header `edge-deadline-remaining-ms`
/// (not from a browser to another origin, where it would force a CORS
/// preflight), in other formats or none with [`FetchOptions::propagate`]. A
/// header the caller set is not overwritten.
///
/// With [`FetchOptions::retry`] the read recovers (see [`Resumed`] and
/// src/web/resume.rs): failures before the first content are retried
/// invisibly, an event stream that breaks after content is continued with
/// `Last-Event-ID` and whole events only reach the reader, and otherwise the
/// [`FetchOptions::resume`] hook continues it.
///
/// ```no_run
/// use edge_deadline::web::{fetch_with_deadline, Deadline, FetchOptions, RetryOptions};
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(60_000.0)?;
/// let options = FetchOptions::new(&deadline).stall_ms(5_000.0).retry(RetryOptions::new(1_000.0));
/// // Its body gets each event once, across reconnections.
/// let events = fetch_with_deadline(&"https://example.com/events".into(), None, options).await?;
/// # let _ = events; Ok(()) }
/// ```
///
/// # Errors
/// [`Error::DeadlineExceeded`]; [`Error::StreamStalled`] with phase
/// `FirstByte`; the reason `init`'s signal aborted with, or the network error,
/// as [`Error::Js`]; [`Error::InvalidArgument`] naming `firstByteMs`,
/// `firstChunkMs`, `stallMs` or `retry.attemptTimeoutMs` (or a retry
/// option) before any I/O. Stalls of the body surface when it is read. With
/// `retry`, these are the last attempt's, once no retry is allowed, and
/// [`Error::RetryFailed`] when not even the first attempt could start (less
/// than `attempt_min_ms` left).
///
/// ```no_run
/// use edge_deadline::web::{fetch_with_deadline, Deadline, FetchOptions};
/// # async fn demo() -> Result<(), edge_deadline::web::Error> {
/// let deadline = Deadline::in_ms(5_000.0)?;
/// let response =
///     fetch_with_deadline(&"https://example.com/".into(), None, FetchOptions::new(&deadline).stall_ms(2_000.0)).await?;
/// # let _ = response; Ok(()) }
/// ```
pub async fn fetch_with_deadline(
    input: &JsValue,
    init: Option<&RequestInit>,
    options: FetchOptions<'_>,
) -> Result<Response, Error> {
    let FetchOptions {
        deadline,
        first_byte_ms,
        first_chunk_ms,
        stall_ms,
        is_progress,
        propagate,
        retry,
        resume,
        max_event_bytes,
        max_line_bytes,
    } = options;
    let cap = |param: &'static str, value: Option<f64>, default: usize| match value {
        None => Ok(default),
        Some(v) => crate::core::resume::check_cap(param, v).map_err(|e| Error::described(param, &e)),
    };
    let caps = (
        cap("maxEventBytes", max_event_bytes, crate::core::resume::MAX_EVENT_BYTES)?,
        cap("maxLineBytes", max_line_bytes, crate::core::resume::MAX_LINE_BYTES)?,
    );
    let once = Once {
        at: deadline.instant_ms(),
        deadline_signal: deadline.signal(),
        first_byte_ms,
        first_chunk_ms,
        stall_ms,
        is_progress,
        propagate,
    };
    if retry.is_none() && resume.is_none() {
        return fetch_once(input, init, once).await;
    }
    super::resume::fetch_resumable(input, init, once, retry, resume, caps).await
}

/// One request of [`fetch_with_deadline`]: what it needs of the deadline
/// (the instant and its signal) and the limits, owned, so that a resumable
/// read can make the request again after the caller's borrow has ended.
pub(super) struct Once {
    pub(super) at: f64,
    pub(super) deadline_signal: AbortSignal,
    pub(super) first_byte_ms: Option<f64>,
    pub(super) first_chunk_ms: Option<f64>,
    pub(super) stall_ms: Option<f64>,
    pub(super) is_progress: Option<ProgressFn>,
    pub(super) propagate: Option<Vec<HeaderFormat>>,
}

/// [`fetch_with_deadline`] without retries: one request, its body guarded.
pub(super) async fn fetch_once(input: &JsValue, init: Option<&RequestInit>, once: Once) -> Result<Response, Error> {
    let first_byte = once.check()?;
    let t0 = sys::now();
    let Once { at, deadline_signal, first_byte_ms: _, first_chunk_ms, stall_ms, is_progress, propagate } = once;
    let stall_ms = stall_ms.unwrap_or(NO_LIMIT);

    let upstream = AbortController::new().map_err(Error::from)?;
    let mut links = Links { upstream: upstream.clone(), linked: Vec::new() };
    links.link(&deadline_signal);
    let init_copy: RequestInit = match init {
        Some(init) => {
            let signal = Reflect::get(init, &JsValue::from_str("signal")).unwrap_or(JsValue::UNDEFINED);
            if let Some(signal) = signal.dyn_ref::<AbortSignal>() {
                links.link(signal);
            }
            Object::assign(&Object::new(), init).unchecked_into()
        }
        None => RequestInit::new(),
    };
    if let Some(request) = input.dyn_ref::<Request>() {
        links.link(&request.signal());
    }
    init_copy.set_signal(Some(&upstream.signal()));
    // The default header only where it cannot change the request's CORS mode;
    // formats given are sent anyway (as JavaScript's `propagate`).
    let formats = match propagate {
        Some(formats) => formats,
        None if cross_origin_in_browser(input) => Vec::new(),
        None => vec![HeaderFormat::EdgeDeadlineRemainingMs],
    };
    let left = at - sys::now();
    add_budget_headers(input, &init_copy, if left > 0.0 { left } else { 0.0 }, &formats)?;

    let guard = first_byte.map(|config| FirstByteGuard::start(config, t0, &upstream));
    let result = match sys::fetch(input, &init_copy) {
        Ok(promise) => JsFuture::from(promise).await,
        Err(error) => Err(error),
    };
    drop(guard);
    let response: Response = match result {
        Ok(response) => response.unchecked_into(),
        // Some runtimes reject with their own AbortError: report our reason.
        Err(error) => {
            let signal = upstream.signal();
            return Err(Error::from(if signal.aborted() { signal.reason() } else { error }));
        }
    };
    let Some(body) = response.body() else { return Ok(response) };
    // On a `text/event-stream` only events are progress unless `is_progress` was given (invariant 6).
    let event_stream = response.headers().get("content-type").ok().flatten().is_some_and(|t| is_event_stream(&t));
    // The upstream controller already follows the deadline's signal (and the caller's).
    let stall = StallOptions {
        // Not given: the core's default wait for first content, from the headers.
        first_chunk_ms: first_chunk_ms.unwrap_or_else(|| default_first_chunk_ms(Some(at), sys::now())),
        stall_ms,
        at: Some(at),
        followed: vec![upstream.signal()],
        controller: Some(upstream),
        is_progress,
        event_stream,
    };
    let body = watch(body, stall, Some(Box::new(move || drop(links))))?;
    rewrap(&response, &body)
}

impl Once {
    /// Range checks before any I/O (the core names the parameter); the
    /// wait for headers as a stall configuration, when one was given.
    pub(super) fn check(&self) -> Result<Option<StallConfig>, Error> {
        let t0 = sys::now();
        StallConfig::new(self.first_chunk_ms.unwrap_or(NO_LIMIT), self.stall_ms.unwrap_or(NO_LIMIT), Some(self.at))?
            .decide(&Snapshot::started(t0), t0)?;
        self.first_byte_ms.map(first_byte_config).transpose()
    }
}

/// Guards `body`, a body that continues a resumed read, as [`fetch_once`]
/// guards its own: the limits of `once`, the upstream `controller`, and
/// `followed` (the attempt's signal) whose abort ends it with its reason.
pub(super) fn guard(
    body: ReadableStream,
    once: Once,
    controller: AbortController,
    followed: AbortSignal,
    event_stream: bool,
) -> Result<ReadableStream, Error> {
    let stall = StallOptions {
        // Not given: the core's default wait for first content, from the headers.
        first_chunk_ms: once.first_chunk_ms.unwrap_or_else(|| default_first_chunk_ms(Some(once.at), sys::now())),
        stall_ms: once.stall_ms.unwrap_or(NO_LIMIT),
        at: Some(once.at),
        followed: vec![once.deadline_signal, followed, controller.signal()],
        controller: Some(controller),
        is_progress: once.is_progress,
        event_stream,
    };
    watch(body, stall, None)
}

/// `response` with `body` instead of its own: the status, headers, url,
/// `redirected` and `type` kept.
pub(super) fn rewrap(response: &Response, body: &ReadableStream) -> Result<Response, Error> {
    let init = ResponseInit::new();
    init.set_status(response.status());
    init.set_status_text(&response.status_text());
    init.set_headers(&response.headers());
    let wrapped = Response::new_with_opt_readable_stream_and_init(Some(body), &init).map_err(Error::from)?;
    // A constructed Response has no url; keep the fetched one's.
    for key in ["url", "redirected", "type"] {
        let descriptor = Object::new();
        let _ = Reflect::set(&descriptor, &"value".into(), &Reflect::get(response, &key.into()).unwrap_or_default());
        let _ = Reflect::set(&descriptor, &"enumerable".into(), &JsValue::TRUE);
        Object::define_property(&wrapped, &key.into(), &descriptor);
    }
    Ok(wrapped)
}
