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
//!    js/stall.js: a ref toggle per chunk measured costly in Deno). A
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
use web_sys::{
    AbortController, AbortSignal, ReadableStream, ReadableStreamDefaultController, ReadableStreamDefaultReader,
};

use super::errors::StallPhase;
use super::sse::sse_progress;
use super::timers::{self, child, Child, KeepAlive, Parent, Parents};
use super::{sys, Deadline, Error};
use crate::core::sse::is_event_stream;
use crate::core::stall::{Notes, Phase, StallConfig, StallError, StallWatcher, Step, Verdict};

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
    pub(super) first_chunk_ms: f64,
    pub(super) stall_ms: f64,
    pub(super) at: Option<f64>,
    pub(super) followed: Vec<AbortSignal>,
    pub(super) controller: Option<AbortController>,
    pub(super) is_progress: Option<ProgressFn>,
    pub(super) event_stream: bool,
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
// boundary crossings per chunk, which measured well above the JavaScript
// wrapper's per-chunk cost in Deno (BENCHMARKS.md, "Rust API (`web`
// feature)"). The size is
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

pub(super) fn watch(
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
    let t0 = timers::now();
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
        let t = timers::now();
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
        let t = timers::now();
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
            let rearm =
                notes.chunk(size, counts, sampling, timers::now).and_then(|t| machine.on_burst(notes.progress, t));
            // A read answered keeps the hold until the next chunk or wake-up looks again (invariant 4).
            if !waiting {
                s.notes.hold(timers::now());
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
