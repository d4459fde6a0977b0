//! Streams that recover: [`fetch_with_deadline`](super::fetch_with_deadline)
//! with [`FetchOptions::retry`](super::FetchOptions::retry) and
//! [`FetchOptions::resume`](super::FetchOptions::resume), the meaning of the
//! JavaScript `retry` and `resume` options (`js/resume.js`).
//!
//! A streamed answer that breaks before anything reached the reader is
//! simply asked for again; one that breaks in the middle continues where the
//! reader is, never from the start. Every decision of the read is the core's
//! streamed-read machine ([`crate::core::read::Read`], see its module doc):
//! where an event ends, what is progress, when an attempt has stalled (the
//! wait for headers, for the first content, between progress chunks),
//! whether and how a failed attempt is made again (as it was, with
//! `Last-Event-ID`, through the hook), whether a resumed answer may be
//! spliced, what the reader gets and how the read ends. This file drives one
//! machine per read and does only what a host can: it makes the attempts'
//! requests, reads their bodies, arms the one timer, follows the signals, and
//! turns the machine's ending into the reader's [`Error`].
//!
//! # How the host drives the machine
//! Each thing that happens (an attempt's answer or failure, a chunk, the end
//! of a body, the timer, a signal, the reader's pull or cancel) is one
//! [`Input`] with the time; the host then performs the machine's actions in
//! order: `Connect` makes a request (the caller's, a copy with
//! `Last-Event-ID`, or the hook's), `Abort` aborts the current attempt,
//! `DeliverChunk` enqueues the chunk as it came, `Keep` holds it,
//! `Deliver` enqueues the bytes held (one piece, or the pieces as read) and
//! `Discard` drops them, `Wake` re-arms the one timer, `End` ends the read. A body is read by a few lines of JavaScript that call into Rust
//! once per chunk. An input that arrives while actions are being performed (a pull
//! made by an enqueue) is told to the machine at once and its actions are
//! performed after those already due, in order.
//!
//! # Invariants (the host's)
//! 1. Every attempt has its own `AbortController`; its signal also follows
//!    the read's (the deadline, the caller's signals). An attempt the machine
//!    leaves (`Abort`) is aborted and its body cancelled: the upstream
//!    request is released, not abandoned. Whatever a left attempt reports
//!    afterwards is ignored.
//! 2. One timer per read (a timers.rs `child` that also follows the read's
//!    signals): each `Wake` moves it; when it fires the machine is told.
//! 3. Nothing is read from the upstream while nobody reads the stream (the
//!    reader's stream has no queue of its own): a body is read only while a
//!    pull waits, and the machine is told when nobody does (`Hold`) and when
//!    someone reads again (`Unhold`).
//! 4. A Node or Deno process is kept alive (a timers.rs `KeepAlive`: the
//!    timer is unref'd) while someone awaits the read (the caller its
//!    answer, the reader a chunk) and the timer is armed.
//! 5. When the read ends, the timer, its listeners, the hold on the
//!    process, the attempt, the hook and the predicates are let go.
//! 6. The reader's error is ours, as the machine says (JavaScript's
//!    invariant 6 of js/resume.js): a stall or a cap's refusal as it is,
//!    with `deliveredBytes`; the deadline and the caller's abort as they are
//!    (without the field); anything else as the `cause` (`last`) of a
//!    `RetryFailed`. Before the body, the last attempt's error (or its
//!    non-ok answer) goes to the caller as it is. A mistake of the caller's
//!    (a hook that gives something other than a Response, a body that is not
//!    bytes) ends the read as an abort does, with that `TypeError`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use js_sys::{Array, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::{
    AbortController, AbortSignal, Headers, ReadableStream, ReadableStreamDefaultController,
    ReadableStreamDefaultReader, Request, RequestInit, Response,
};

use super::attempt::{add_budget_headers, budget_formats, request_headers, rewrap, Once};
use super::errors::StallPhase;
use super::headers::HeaderFormat;
use super::retry::{asked_wait, own_deadline, random_seed, reports, Classify, RetryBudget, RetryOptions};
use super::stall::{ignore_rejection, ProgressFn};
use super::timers::{self, child, Child, KeepAlive, Parent, Parents};
use super::{sys, Error};
use crate::core::read::{Action, Cause, Ending, Head, How, Input, Read, ReadError, ReadFailure, ReadOptions};
use crate::core::resume::NOT_RESUMABLE;
use crate::core::retry::{Failure, RetryRun};
use crate::core::sse::is_event_stream;

/// Whether this runtime's `Headers` take any text and send it as UTF-8
/// (workerd), not a ByteString only.
fn utf8_headers() -> bool {
    thread_local! {
        static SEEN: bool = Headers::new().map(|h| h.set("x-probe", "\u{20ac}").is_ok()).unwrap_or(false);
    }
    SEEN.with(|s| *s)
}

/// What a resume hook ([`FetchOptions::resume`](super::FetchOptions::resume))
/// is told: what the reader already has, and the attempt about to be made.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The chunks delivered to the reader, in order, as the reader got them
    /// (on an event stream, each one or more whole events; an event longer
    /// than the default event cap, with raised caps, in the pieces it was
    /// read in).
    pub chunks: Vec<Uint8Array>,
    /// How many bytes were delivered.
    pub bytes: f64,
    /// The last event id delivered, on an event stream whose events had ids.
    pub last_event_id: Option<String>,
    /// The number of the attempt the hook makes (the first request was 1).
    pub attempt: u32,
    /// The attempt's signal: pass it to the request that continues the
    /// stream. It aborts when the attempt is given up, at the deadline, or
    /// when the reader cancels.
    pub signal: AbortSignal,
    /// What is left of the deadline as the hook is called, in the
    /// propagation headers (`edge-deadline-remaining-ms`, or the formats of
    /// [`FetchOptions::propagate`](super::FetchOptions::propagate)): send
    /// them with the request that continues the stream.
    pub headers: Headers,
}

/// The resume hook.
pub(super) type ResumeFn = Box<dyn FnMut(Resumed) -> Option<Promise>>;

// The reader's stream: pulled only when a read waits (invariant 3).
#[wasm_bindgen(inline_js = r#"
export function resumeSource(start, pull, cancel) {
  return new ReadableStream({ start: (c) => start(c), pull: () => pull(), cancel: (r) => cancel(r) }, { highWaterMark: 0 });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = resumeSource)]
    fn resume_source(start: &JsValue, pull: &JsValue, cancel: &JsValue) -> ReadableStream;
}

// One read of an attempt's body, unpacked in JavaScript: one call into Rust
// per chunk (a Rust future per read, and reading `done` and `value` from
// Rust, cost more than the rest of the chunk's path).
#[wasm_bindgen(inline_js = r#"
export function resumeRead(reader, onChunk, onDone, onError) {
  reader.read().then((r) => (r.done ? onDone() : onChunk(r.value)), onError);
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = resumeRead)]
    fn resume_read(reader: &ReadableStreamDefaultReader, on_chunk: &JsValue, on_done: &JsValue, on_error: &JsValue);
}

/// An attempt's body as the host reads it: its reader, and the functions a
/// read calls back (owned by JavaScript; they hold the read until the
/// attempt is let go).
struct Body {
    reader: ReadableStreamDefaultReader,
    on_chunk: JsValue,
    on_done: JsValue,
    on_error: JsValue,
}

/// What a read of a body gave.
enum Got {
    Chunk(JsValue),
    Done,
    Error(JsValue),
}

/// The attempt the machine is on.
struct Attempt {
    /// The host's number for it (what a late report is checked against).
    serial: u32,
    controller: AbortController,
    /// Its answer, once its head was told.
    response: Option<Response>,
    /// Its body, once the machine reads it.
    body: Option<Body>,
    /// A read of the body is in flight.
    reading: bool,
    /// The machine was told that nobody reads (`Hold`).
    held: bool,
}

impl Attempt {
    /// Lets go of it: its body cancelled and its request aborted (invariant 1).
    fn release(self, reason: Option<&JsValue>) {
        // Cancel first: aborting first would error the source, and its cancel would then reject.
        match (&self.body, &self.response) {
            (Some(Body { reader, .. }), _) => ignore_rejection(match reason {
                Some(r) => reader.cancel_with_reason(r),
                None => reader.cancel(),
            }),
            (None, Some(response)) => {
                if let Some(body) = response.body().filter(|b| !b.locked()) {
                    ignore_rejection(body.cancel());
                }
            }
            (None, None) => {}
        }
        if !self.controller.signal().aborted() {
            match reason {
                Some(r) => self.controller.abort_with_reason(r),
                None => self.controller.abort(),
            }
        }
    }
}

/// The answer `fetch_with_deadline` awaits: the Response, or the error.
type Answer = Rc<RefCell<Option<Result<Response, Error>>>>;

/// One read: the machine and what the host holds for it.
struct Host {
    read: Read,
    input: JsValue,
    init: Option<RequestInit>,
    at: f64,
    deadline_signal: AbortSignal,
    /// Aborts with the deadline and the caller's signals.
    whole: AbortSignal,
    propagate: Option<Vec<HeaderFormat>>,
    is_progress: Option<ProgressFn>,
    classify: Option<Classify>,
    budget: Option<Rc<RetryBudget>>,
    hook: Option<ResumeFn>,
    /// The one timer, following `whole` (invariant 2).
    node: Option<Child>,
    attempt: Option<Attempt>,
    serial: u32,
    /// The reader's stream's controller, and the stream until the caller has it.
    out: Option<ReadableStreamDefaultController>,
    stream: Option<ReadableStream>,
    /// A pull waits.
    wanted: bool,
    keep: Option<KeepAlive>,
    /// Until the caller has its answer: where it goes, and how to wake it.
    answer: Option<(Answer, js_sys::Function)>,
    /// What the reader got, for the hook.
    delivered: Vec<Uint8Array>,
    /// The chunk last told, as it came and as bytes.
    chunk: JsValue,
    /// When that chunk was told, until the end of the turn: a hold that
    /// follows in the same turn starts then (as js/resume.js's `heldAt`),
    /// without reading the clock again.
    chunk_at: Option<f64>,
    chunk_bytes: Vec<u8>,
    /// The chunks kept (`Keep`), in order, taken by `Deliver` and `Discard`.
    held: VecDeque<Uint8Array>,
    /// The last error an attempt failed with (what `Cause::Host` and `Cause::Status` name).
    last_error: Option<Error>,
    /// The reason of a signal's abort or a cancel, or the caller's mistake.
    reason: Option<JsValue>,
}

impl Host {
    /// Tells the machine `input` at `now`, with the shared budget.
    fn handle(&mut self, input: Input<'_>, now: f64) {
        match self.budget.clone() {
            Some(b) => self.read.handle(input, now, Some(&mut b.0.borrow_mut())),
            None => self.read.handle(input, now, None),
        }
    }

    /// The next `len` bytes kept, as the pieces they were read in (the last one cut where `len` ends).
    fn take_held(&mut self, len: usize) -> Vec<Uint8Array> {
        let mut pieces = Vec::new();
        let mut rest = len as u32;
        while rest > 0 {
            let Some(piece) = self.held.pop_front() else { break };
            if piece.length() <= rest {
                rest -= piece.length();
                pieces.push(piece);
            } else {
                pieces.push(piece.subarray(0, rest));
                self.held.push_front(piece.subarray(rest, piece.length()));
                rest = 0;
            }
        }
        pieces
    }

    /// The attempt `serial`, if the machine is still on it.
    fn current(&mut self, serial: u32) -> Option<&mut Attempt> {
        let ended = self.read.ended();
        self.attempt.as_mut().filter(|a| a.serial == serial && !ended)
    }

    /// The request again (a copy of the caller's), with `Last-Event-ID` when given.
    fn request(&self, signal: &AbortSignal, last_event_id: Option<&str>) -> Result<Promise, Error> {
        let init: RequestInit = match &self.init {
            Some(init) => Object::assign(&Object::new(), init).unchecked_into(),
            None => RequestInit::new(),
        };
        init.set_signal(Some(signal));
        let request = self.input.dyn_ref::<Request>();
        if let Some(id) = last_event_id {
            let headers = request_headers(&self.input, &init)?;
            // The id's UTF-8 bytes, as EventSource sends it. Where `Headers` takes a
            // ByteString only (Node, Deno, browsers), one character per byte: the id as it is
            // would go out as Latin-1 ("é" as e9) or make `fetch` throw ("€"). Where it takes
            // any text and sends it as UTF-8 (workerd), the id as it is.
            if utf8_headers() {
                headers.set("last-event-id", id).map_err(Error::Js)?;
            } else {
                let bytes: String = id.bytes().map(char::from).collect();
                headers.set("last-event-id", &bytes).map_err(Error::Js)?;
            }
            init.set_headers(&headers);
        }
        // A Request is used once: each attempt sends a copy of the caller's.
        let input = match request {
            Some(request) => request.clone().map_err(Error::Js)?.into(),
            None => self.input.clone(),
        };
        let formats = budget_formats(&self.input, self.propagate.clone());
        add_budget_headers(&input, &init, (self.at - timers::now()).max(0.0), &formats)?;
        sys::fetch(&input, &init).map_err(Error::from)
    }

    /// What the hook is told for attempt `number`.
    fn resumed(
        &self,
        number: u32,
        bytes: u64,
        last_event_id: Option<String>,
        signal: &AbortSignal,
    ) -> Result<Resumed, Error> {
        let headers = Headers::new().map_err(Error::Js)?;
        let left = (self.at - timers::now()).max(0.0);
        let formats = self.propagate.clone().unwrap_or_else(|| vec![HeaderFormat::EdgeDeadlineRemainingMs]);
        for format in formats {
            headers.set(format.name(), &crate::core::headers::encode(format, left)?).map_err(Error::Js)?;
        }
        Ok(Resumed {
            chunks: self.delivered.clone(),
            bytes: bytes as f64,
            last_event_id,
            attempt: number,
            signal: signal.clone(),
            headers,
        })
    }

    /// An error an attempt failed with, as the caller's `classify` sees it (else ambiguous).
    fn classified(&self, error: &Error) -> Failure {
        self.classify.as_ref().map_or(Failure::Ambiguous, |c| c(error))
    }

    /// The error that `cause` names (the machine's own, or the host's last).
    fn cause(&self, cause: Cause) -> Option<Error> {
        match cause {
            Cause::Stalled { phase, after_ms, chunks, bytes } => {
                let phase = match phase {
                    "first-byte" => StallPhase::FirstByte,
                    "first-chunk" => StallPhase::FirstChunk,
                    _ => StallPhase::Stall,
                };
                Some(Error::StreamStalled { phase, after_ms, chunks, bytes })
            }
            Cause::Refused(code, status) => {
                let e =
                    js_sys::Error::new(&format!("the resumed answer ({status}) cannot continue the stream: {code}"));
                e.set_name("ResumeRefused");
                let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(code));
                let _ = Reflect::set(&e, &JsValue::from_str("status"), &JsValue::from(status));
                Some(Error::Js(e.into()))
            }
            Cause::Status(_) | Cause::Host => self.last_error.clone(),
        }
    }

    /// The reader's error for a failed read (invariant 6).
    fn error(&self, failure: &ReadFailure) -> Error {
        match &failure.error {
            ReadError::Stalled(cause) | ReadError::Last(cause) => {
                self.cause(*cause).unwrap_or_else(|| Error::invalid("retry", "the read failed without an error"))
            }
            ReadError::Deadline => {
                if self.deadline_signal.aborted() {
                    Error::from(self.deadline_signal.reason())
                } else {
                    Error::DeadlineExceeded { at: self.at, late_by_ms: (timers::now() - self.at).max(0.0) }
                }
            }
            ReadError::Aborted => Error::from(self.reason.clone().unwrap_or_else(|| self.whole.reason())),
            error @ ReadError::TooLarge { refusal, max_bytes } => {
                let e = js_sys::Error::new(&error.message().unwrap_or_default());
                e.set_name("StreamTooLarge");
                let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(refusal.code()));
                let _ = Reflect::set(&e, &JsValue::from_str("maxBytes"), &JsValue::from(*max_bytes));
                Error::Js(e.into())
            }
            ReadError::RetryFailed { reason, message, cause } => {
                let stop = (*reason != NOT_RESUMABLE).then(|| self.read.run().stopped()).flatten().map(|s| s.stop());
                Error::RetryFailed {
                    reason: (*reason).into(),
                    message: message.to_string(),
                    attempts: reports(self.read.run().records()),
                    last: self.cause(*cause).map(Box::new),
                    retry_after_ms: stop.as_ref().and_then(|s| s.retry_after_ms),
                    remaining_ms: stop.as_ref().and_then(|s| s.remaining_ms),
                }
            }
        }
    }
}

/// A host error that ends the read whatever the retry loop would say: the
/// deadline's, or a mistake (ours or the caller's).
fn fatal(error: &Error) -> bool {
    matches!(error, Error::DeadlineExceeded { .. } | Error::InvalidArgument { .. } | Error::InvalidType { .. })
}

/// The read, shared by its callbacks.
struct Shared {
    host: RefCell<Host>,
    /// Actions are being performed (an input now only adds to them).
    busy: Cell<bool>,
}

impl Shared {
    /// Tells the machine `input`, then performs what it says.
    fn tell(self: &Rc<Self>, input: Input<'_>) {
        self.host.borrow_mut().handle(input, timers::now());
        self.pump();
    }

    /// Performs the machine's actions, then what the host does between them
    /// (reading a body while a pull waits, telling a hold), until neither
    /// has anything left.
    fn pump(self: &Rc<Self>) {
        if self.busy.replace(true) {
            return;
        }
        loop {
            let action = self.host.borrow_mut().read.poll();
            match action {
                Some(action) => self.perform(action),
                None if self.follow() => {}
                None => break,
            }
        }
        self.busy.set(false);
        self.host.borrow_mut().chunk_at = None;
        self.keep();
    }

    fn perform(self: &Rc<Self>, action: Action) {
        match action {
            Action::Connect { attempt, how } => self.connect(attempt, how),
            Action::Abort => {
                let (attempt, reason) = {
                    let mut h = self.host.borrow_mut();
                    (h.attempt.take(), h.reason.clone())
                };
                if let Some(attempt) = attempt {
                    attempt.release(reason.as_ref());
                }
            }
            Action::DeliverChunk => {
                let chunk = self.host.borrow().chunk.clone();
                self.deliver(chunk.unchecked_ref());
            }
            Action::Keep => {
                let mut h = self.host.borrow_mut();
                let chunk = h.chunk.clone().unchecked_into();
                h.held.push_back(chunk);
            }
            Action::Discard(len) => drop(self.host.borrow_mut().take_held(len)),
            Action::Deliver { len, join } => {
                let pieces = self.host.borrow_mut().take_held(len);
                if join && pieces.len() > 1 {
                    let one = Uint8Array::new_with_length(len as u32);
                    let mut at = 0;
                    for piece in &pieces {
                        one.set(piece, at);
                        at += piece.length();
                    }
                    self.deliver(&one);
                } else {
                    for piece in &pieces {
                        self.deliver(piece);
                    }
                }
            }
            Action::Wake { at_ms } => {
                if let Some(node) = self.host.borrow().node.as_ref() {
                    node.rearm(at_ms);
                }
            }
            Action::End(ending) => self.end(ending),
        }
    }

    /// Hands `piece` to the reader.
    fn deliver(self: &Rc<Self>, piece: &Uint8Array) {
        let out = {
            let mut h = self.host.borrow_mut();
            if h.hook.is_some() {
                h.delivered.push(Uint8Array::new(piece));
            }
            h.wanted = false;
            h.out.clone()
        };
        if let Some(out) = out {
            let _ = out.enqueue_with_chunk(piece);
        }
    }

    /// Makes attempt `number`, `how`: its request goes out, its outcome is told later.
    fn connect(self: &Rc<Self>, number: u32, how: How) {
        let controller = match AbortController::new() {
            Ok(controller) => controller,
            Err(error) => {
                // No runtime this supports lacks one: the read ends as an abort does.
                self.host.borrow_mut().reason = Some(error);
                return self.tell(Input::Aborted { deadline: false });
            }
        };
        let (serial, signal) = {
            let mut h = self.host.borrow_mut();
            h.serial += 1;
            let signal = AbortSignal::any(&Array::of2(&controller.signal(), &h.whole));
            let serial = h.serial;
            h.attempt = Some(Attempt { serial, controller, response: None, body: None, reading: false, held: false });
            (serial, signal)
        };
        let shared = self.clone();
        spawn_local(async move {
            let answer = match how {
                How::Plain => shared.send(&signal, None).await,
                How::LastEventId(id) => shared.send(&signal, Some(&id)).await,
                How::Hook { bytes, last_event_id } => match shared.call_hook(number, bytes, last_event_id, &signal) {
                    Ok(Some(promise)) => match JsFuture::from(promise).await {
                        Ok(value) if value.is_instance_of::<Response>() => Ok(value),
                        Ok(_) => Err(Error::InvalidType {
                            param: "resume",
                            code: "NOT_A_RESPONSE",
                            message: "'resume' must return a Promise of a Response (or None to end the stream): \
                                          it gave something else"
                                .into(),
                        }),
                        Err(error) => Err(Error::from(error)),
                    },
                    Ok(None) => {
                        if shared.host.borrow_mut().current(serial).is_some() {
                            shared.tell(Input::HookDeclined);
                        }
                        return;
                    }
                    Err(error) => Err(error),
                },
            };
            match answer {
                Ok(response) => shared.head(serial, response.unchecked_into()),
                Err(error) => shared.fail(serial, error),
            }
        });
    }

    /// The request again, with `Last-Event-ID` when given: its answer.
    async fn send(&self, signal: &AbortSignal, last_event_id: Option<&str>) -> Result<JsValue, Error> {
        let sent = self.host.borrow().request(signal, last_event_id);
        JsFuture::from(sent?).await.map_err(Error::from)
    }

    /// Calls the caller's hook for attempt `number` (no borrow held: it is the caller's code).
    fn call_hook(
        &self,
        number: u32,
        bytes: u64,
        last_event_id: Option<String>,
        signal: &AbortSignal,
    ) -> Result<Option<Promise>, Error> {
        let (resumed, hook) = {
            let mut h = self.host.borrow_mut();
            (h.resumed(number, bytes, last_event_id, signal), h.hook.take())
        };
        let Some(mut hook) = hook else { return Ok(None) };
        let given = resumed.map(&mut hook);
        let mut h = self.host.borrow_mut();
        if !h.read.ended() {
            h.hook = Some(hook);
        }
        given
    }

    /// Attempt `serial` answered.
    fn head(self: &Rc<Self>, serial: u32, response: Response) {
        let mut h = self.host.borrow_mut();
        let Some(attempt) = h.current(serial) else {
            drop(h);
            if let Some(body) = response.body().filter(|b| !b.locked()) {
                ignore_rejection(body.cancel());
            }
            return;
        };
        attempt.response = Some(Clone::clone(&response));
        let headers = response.headers();
        let event_stream = headers.get("content-type").ok().flatten().is_some_and(|t| is_event_stream(&t));
        let content_range = headers.get("content-range").ok().flatten();
        let status = response.status();
        let (failure, server_wait_ms) = if response.ok() {
            (None, None)
        } else {
            // A non-ok answer: an error carrying the Response (`.response`, `.status`).
            let e = js_sys::Error::new(&format!("the upstream answered {} {}", status, response.status_text()));
            let _ = Reflect::set(&e, &JsValue::from_str("status"), &JsValue::from(status));
            let _ = Reflect::set(&e, &JsValue::from_str("response"), &response);
            let error = Error::Js(e.into());
            // The caller's `classify`, else the core's rule for a status.
            let answer = (h.classify.as_ref().map(|c| c(&error)), asked_wait(&error));
            h.last_error = Some(error);
            answer
        };
        let head = Head {
            status,
            event_stream,
            content_range: content_range.as_deref(),
            body: response.body().is_some(),
            failure,
            server_wait_ms,
        };
        h.handle(Input::Head(head), timers::now());
        drop(h);
        self.pump();
    }

    /// Attempt `serial` failed with `error` (its request, the hook, its body).
    fn fail(self: &Rc<Self>, serial: u32, error: Error) {
        let mut h = self.host.borrow_mut();
        if h.current(serial).is_none() {
            return;
        }
        if let Some(a) = h.attempt.as_mut() {
            a.reading = false;
        }
        let input = if fatal(&error) {
            let deadline = own_deadline(&error, h.at);
            h.reason = Some(error.into());
            Input::Aborted { deadline }
        } else {
            let failure = h.classified(&error);
            h.last_error = Some(error);
            Input::Failed { failure, server_wait_ms: None }
        };
        h.handle(input, timers::now());
        drop(h);
        self.pump();
    }

    /// A read of attempt `serial`'s body gave `got`.
    fn on_read(self: &Rc<Self>, serial: u32, got: Got) {
        let mut h = self.host.borrow_mut();
        let Some(attempt) = h.current(serial) else { return };
        attempt.reading = false;
        let chunk = match got {
            Got::Done => {
                h.handle(Input::End, timers::now());
                drop(h);
                return self.pump();
            }
            Got::Error(error) => {
                drop(h);
                return self.fail(serial, Error::from(error));
            }
            Got::Chunk(chunk) => chunk,
        };
        let Some(view) = chunk.dyn_ref::<Uint8Array>() else {
            drop(h);
            let error = Error::InvalidType {
                param: "resume",
                code: "NOT_BYTES",
                message: "a body that continues a stream must be bytes: a chunk was not a Uint8Array".into(),
            };
            return self.fail(serial, error);
        };
        let mut bytes = std::mem::take(&mut h.chunk_bytes);
        bytes.resize(view.length() as usize, 0);
        view.copy_to(&mut bytes);
        let progress = match h.is_progress.as_mut().map(|f| f(&chunk)).transpose() {
            Ok(progress) => progress,
            Err(error) => {
                drop(h);
                return self.fail(serial, error);
            }
        };
        h.chunk = chunk;
        let now = timers::now();
        h.chunk_at = Some(now);
        h.handle(Input::Chunk { bytes: &bytes, progress }, now);
        h.chunk_bytes = bytes;
        drop(h);
        self.pump();
    }

    /// The body of attempt `serial`, read by `reader`.
    fn body(self: &Rc<Self>, serial: u32, reader: ReadableStreamDefaultReader) -> Body {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        Body {
            reader,
            on_chunk: Closure::<dyn FnMut(JsValue)>::new(move |v| a.on_read(serial, Got::Chunk(v))).into_js_value(),
            on_done: Closure::<dyn FnMut()>::new(move || b.on_read(serial, Got::Done)).into_js_value(),
            on_error: Closure::<dyn FnMut(JsValue)>::new(move |e| c.on_read(serial, Got::Error(e))).into_js_value(),
        }
    }

    /// What the host does when the machine has nothing to say: once an
    /// answer is read, hand the caller its Response (the first time), and
    /// read its body while a pull waits or tell the machine that nobody
    /// does. `true` when it did something.
    fn follow(self: &Rc<Self>) -> bool {
        let mut h = self.host.borrow_mut();
        if h.read.ended() {
            return false;
        }
        let wanted = h.wanted;
        let Some(attempt) = h.attempt.as_mut() else { return false };
        let Some(response) = attempt.response.clone() else { return false };
        let Some(body) = attempt.body.as_ref() else {
            // The machine reads this answer.
            let Some(body) = response.body() else { return false };
            let serial = attempt.serial;
            attempt.body = Some(self.body(serial, body.get_reader().unchecked_into()));
            if let (Some(answer), Some(stream)) = (h.answer.take(), h.stream.take()) {
                drop(h);
                give(answer, rewrap(&response, &stream));
            }
            return true;
        };
        match (wanted, attempt.held, attempt.reading) {
            (true, true, _) => {
                attempt.held = false;
                h.handle(Input::Unhold, timers::now());
                true
            }
            (true, false, false) => {
                resume_read(&body.reader, &body.on_chunk, &body.on_done, &body.on_error);
                attempt.reading = true;
                false
            }
            (false, false, false) => {
                attempt.held = true;
                let now = h.chunk_at.take().unwrap_or_else(timers::now);
                h.handle(Input::Hold, now);
                true
            }
            _ => false,
        }
    }

    /// The read is over: the caller or the reader is told, and everything is let go (invariant 5).
    fn end(self: &Rc<Self>, ending: Ending) {
        let mut h = self.host.borrow_mut();
        let answer = h.answer.take();
        let out = h.out.take();
        let outcome = match ending {
            Ending::Done => Outcome::Close,
            Ending::Cancelled => Outcome::Nothing,
            // The answer as it is: not aborted, not read.
            Ending::HandBack => match h.attempt.take().and_then(|a| a.response) {
                Some(response) => Outcome::Answer(response),
                None => Outcome::Error(Error::invalid("retry", "no answer to hand back"), None),
            },
            Ending::Failed(failure) => Outcome::Error(h.error(&failure), failure.delivered_bytes),
        };
        // The machine aborted every attempt it left; what is left ended well (`Done`).
        let attempt = h.attempt.take();
        let node = h.node.take();
        let keep = h.keep.take();
        h.hook = None;
        h.is_progress = None;
        h.classify = None;
        h.stream = None;
        h.delivered = Vec::new();
        h.held.clear();
        h.chunk = JsValue::UNDEFINED;
        drop(h);
        drop((node, keep, attempt));
        match (outcome, answer, out) {
            (Outcome::Close, _, Some(out)) => {
                let _ = out.close();
            }
            (Outcome::Answer(response), Some(answer), _) => give(answer, Ok(response)),
            (Outcome::Error(error, _), Some(answer), _) => give(answer, Err(error)),
            (Outcome::Error(error, delivered), None, Some(out)) => {
                let value: JsValue = error.into();
                if let Some(bytes) = delivered {
                    let _ = Reflect::set(&value, &JsValue::from_str("deliveredBytes"), &JsValue::from(bytes));
                }
                out.error_with_e(&value);
            }
            _ => {}
        }
    }

    /// Invariant 4: hold the process while someone awaits the read and the timer is armed.
    fn keep(&self) {
        let mut h = self.host.borrow_mut();
        let armed = h.node.as_ref().is_some_and(|n| n.at() < f64::INFINITY);
        let on = armed && !h.read.ended() && (h.wanted || h.answer.is_some());
        if on != h.keep.is_some() {
            h.keep = if on { KeepAlive::take() } else { None };
        }
    }
}

/// What an ending tells the caller (before the body) or the reader.
enum Outcome {
    Close,
    Nothing,
    Answer(Response),
    /// The error, and the bytes delivered when the reader is told them.
    Error(Error, Option<f64>),
}

/// Wakes the caller with its answer.
fn give((slot, wake): (Answer, js_sys::Function), answer: Result<Response, Error>) {
    *slot.borrow_mut() = Some(answer);
    let _ = wake.call0(&JsValue::UNDEFINED);
}

/// [`fetch_with_deadline`](super::fetch_with_deadline) with `retry` or `resume` given.
pub(super) async fn fetch_resumable(
    input: &JsValue,
    init: Option<&RequestInit>,
    once: Once,
    retry: Option<RetryOptions>,
    hook: Option<ResumeFn>,
    caps: (usize, usize),
) -> Result<Response, Error> {
    let mut retry = retry.unwrap_or_else(|| RetryOptions::new(0.0));
    if retry.attempt_timeout().is_some() {
        return Err(Error::invalid(
            "retry.attemptTimeoutMs",
            "'retry.attemptTimeoutMs' does not apply to a stream: bound it with firstByteMs, firstChunkMs and \
             stallMs (and the deadline), and leave attemptTimeoutMs unset",
        ));
    }
    once.check()?;
    let policy = retry.policy(None, true)?;
    let run = RetryRun::new(policy, once.at, retry.seed.unwrap_or_else(random_seed), retry.operation_key.is_some())?;
    let mut signals = vec![once.deadline_signal.clone()];
    if let Some(init) = init {
        if let Ok(signal) = Reflect::get(init, &JsValue::from_str("signal")).and_then(|s| s.dyn_into::<AbortSignal>()) {
            signals.push(signal);
        }
    }
    if let Some(request) = input.dyn_ref::<Request>() {
        signals.push(request.signal());
    }
    signals.extend(retry.signal.take());
    let whole = AbortSignal::any(&signals.iter().collect::<Array>());
    let Once { at, deadline_signal, first_byte_ms, first_chunk_ms, stall_ms, is_progress, propagate } = once;
    let options = ReadOptions {
        deadline_at: at,
        first_byte_ms,
        first_chunk_ms,
        stall_ms,
        from_headers: true,
        hook: hook.is_some(),
        max_event_bytes: caps.0,
        max_line_bytes: caps.1,
    };
    let slot: Answer = Rc::new(RefCell::new(None));
    let mut wake = None;
    let woken = Promise::new(&mut |resolve, _| wake = Some(resolve));
    let wake = wake.ok_or_else(|| Error::invalid("retry", "no Promise"))?;
    let shared = Rc::new(Shared {
        host: RefCell::new(Host {
            read: Read::new(options, run),
            input: input.clone(),
            init: init.map(|i| Object::assign(&Object::new(), i).unchecked_into()),
            at,
            deadline_signal,
            whole: whole.clone(),
            propagate,
            is_progress,
            classify: retry.classify.take(),
            budget: retry.budget.take(),
            hook,
            node: None,
            attempt: None,
            serial: 0,
            out: None,
            stream: None,
            wanted: false,
            keep: None,
            answer: Some((slot.clone(), wake)),
            delivered: Vec::new(),
            chunk: JsValue::UNDEFINED,
            chunk_at: None,
            chunk_bytes: Vec::new(),
            held: VecDeque::new(),
            last_error: None,
            reason: None,
        }),
        busy: Cell::new(false),
    });
    // The reader's stream: its functions hold the read until it ends (then it holds nothing of them).
    let start = {
        let s = shared.clone();
        Closure::<dyn FnMut(ReadableStreamDefaultController)>::new(move |c: ReadableStreamDefaultController| {
            s.host.borrow_mut().out = Some(c);
        })
        .into_js_value()
    };
    let pull = {
        let s = shared.clone();
        Closure::<dyn FnMut()>::new(move || {
            s.host.borrow_mut().wanted = true;
            s.pump();
        })
        .into_js_value()
    };
    let cancel = {
        let s = shared.clone();
        Closure::<dyn FnMut(JsValue)>::new(move |reason: JsValue| {
            s.host.borrow_mut().reason = Some(reason);
            s.tell(Input::Cancel);
        })
        .into_js_value()
    };
    let stream = resume_source(&start, &pull, &cancel);
    shared.host.borrow_mut().stream = Some(stream);
    // The one timer, following the read's signals (a signal aborted already ends the read here).
    let (on_time, on_abort) = (Rc::downgrade(&shared), Rc::downgrade(&shared));
    let node = child(
        Parents::List(&[Parent::Signal(&whole)]),
        f64::INFINITY,
        Some(Box::new(move |node| {
            node.rearm(f64::INFINITY);
            if let Some(s) = on_time.upgrade() {
                s.tell(Input::Wake);
            }
        })),
        Some(Box::new(move |reason, _| {
            if let Some(s) = on_abort.upgrade() {
                let deadline = {
                    let mut h = s.host.borrow_mut();
                    h.reason = Some(reason.clone());
                    own_deadline(&Error::from(reason.clone()), h.at)
                };
                s.tell(Input::Aborted { deadline });
            }
        })),
        None,
    );
    if !shared.host.borrow().read.ended() {
        shared.host.borrow_mut().node = Some(node);
        shared.tell(Input::Start);
    }
    if slot.borrow().is_none() {
        let _ = JsFuture::from(woken).await;
    }
    let answer = slot.borrow_mut().take();
    answer.unwrap_or_else(|| Err(Error::invalid("retry", "the read gave no answer")))
}
