//! Streams that recover: [`fetch_with_deadline`](super::fetch_with_deadline)
//! with [`FetchOptions::retry`](super::FetchOptions::retry) and
//! [`FetchOptions::resume`](super::FetchOptions::resume), the meaning of the
//! JavaScript `retry` and `resume` options (`js/resume.js`).
//!
//! A streamed answer that breaks before anything reached the reader is
//! simply asked for again; one that breaks in the middle continues where the
//! reader is, never from the start. What to do after each failure, and the
//! wait before it, is the core's: the retry loop
//! ([`crate::core::retry::RetryRun`]) says whether another attempt may be
//! made, the resume machine ([`crate::core::resume::Resume`]) says which,
//! [`crate::core::resume::EventCut`] cuts an event stream on event
//! boundaries and reads its ids, [`crate::core::resume::status_failure`]
//! classifies a non-ok answer. This file owns the requests, the attempts'
//! signals, the reader's stream and the abortable waits.
//!
//! # Invariants (the host's)
//! 1. Every attempt has its own `AbortController`; its signal also follows
//!    the read's (the deadline, the caller's signals, the reader's cancel).
//!    An attempt that is left (it failed, it answered with a status that is
//!    retried, its upstream replayed) is aborted: the upstream request is
//!    released, not abandoned.
//! 2. The reader gets each delivered byte once. On an event stream it gets
//!    whole events only: a partial event is held until its blank line, and
//!    dropped when the attempt fails. After a `Last-Event-ID` request, events
//!    are held until the first one with an id: one already delivered means
//!    the upstream ignored the header, and none of that attempt reaches the
//!    reader.
//! 3. The deadline, the caller's signals and the reader's cancel end the read
//!    as they end a read without `retry`: never retried.
//! 4. Nothing is read from the upstream while nobody reads the stream (the
//!    reader's stream has no queue of its own), and when it ends every timer
//!    and listener of it is gone.
//! 5. When the read ends with a failure, the reader's error is ours, with
//!    `deliveredBytes` (JavaScript's invariant 6 of js/resume.js): a stall
//!    or a cap's refusal as it is, the deadline and the caller's abort as
//!    they are (without the field), anything else as the `cause` (`last`)
//!    of a `RetryFailed`: the retry loop's stop, or
//!    [`NOT_RESUMABLE`](crate::core::resume::NOT_RESUMABLE).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{
    AbortController, AbortSignal, Headers, ReadableStream, ReadableStreamDefaultController,
    ReadableStreamDefaultReader, Request, RequestInit, Response,
};

use super::attempt::{fetch_once, guard_body, rewrap, Once};
use super::guard::{Ended, Guard};
use super::headers::HeaderFormat;
use super::retry::{asked_wait, failed, random_seed, reports, Classify, RetryBudget, RetryOptions};
use super::sse::is_event_stream;
use super::stall::{ignore_rejection, ProgressFn};
use super::timers::sleep_until;
use super::{sys, Error};
use crate::core::resume::{
    content_range_start, not_resumable, resume_refusal, status_failure, CutRefusal, Delivered, DeliveredIds, Event,
    EventCut, Next, Resume, NOT_RESUMABLE,
};
use crate::core::retry::{AfterFailure, AttemptFailure, Failure, RetryRun, Start};

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
    /// The chunks delivered to the reader, in order (on an event stream,
    /// one per event).
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

// The reader's stream: pulled only when a read waits (invariant 4).
#[wasm_bindgen(inline_js = r#"
export function resumeSource(pull, cancel) {
  return new ReadableStream({ pull: (c) => pull(c), cancel: (r) => cancel(r) }, { highWaterMark: 0 });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = resumeSource)]
    fn resume_source(pull: &JsValue, cancel: &JsValue) -> ReadableStream;
}

/// How an attempt failed.
struct Failed {
    how: AttemptFailure,
    error: Error,
    /// The wait the upstream asked for (Retry-After & co.).
    wait: Option<f64>,
    /// A non-ok answer, and its attempt's controller: returned as it is
    /// when nothing is retried before the headers.
    answer: Option<(Response, AbortController)>,
    /// It ends the read whatever the retry loop would say (invariant 3, or a
    /// mistake of the caller's).
    fatal: bool,
}

impl Failed {
    fn fatal(error: Error) -> Self {
        Self { how: AttemptFailure::Error(Failure::Permanent), error, wait: None, answer: None, fatal: true }
    }

    /// Lets go of a non-ok answer that is not returned (invariant 1).
    fn release(&mut self) {
        if let Some((response, controller)) = self.answer.take() {
            controller.abort();
            if let Some(body) = response.body().filter(|b| !b.locked()) {
                ignore_rejection(body.cancel());
            }
        }
    }
}

/// The attempt being read.
struct Live {
    controller: AbortController,
    reader: Option<ReadableStreamDefaultReader>,
    done: bool,
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.done && !self.controller.signal().aborted() {
            self.controller.abort();
        }
    }
}

/// What the deadline and the limits are, for each attempt's request.
struct Limits {
    at: f64,
    deadline_signal: AbortSignal,
    first_byte_ms: Option<f64>,
    first_chunk_ms: Option<f64>,
    stall_ms: Option<f64>,
    propagate: Option<Vec<super::HeaderFormat>>,
    is_progress: Option<Rc<RefCell<ProgressFn>>>,
}

impl Limits {
    fn once(&self) -> Once {
        Once {
            at: self.at,
            deadline_signal: self.deadline_signal.clone(),
            first_byte_ms: self.first_byte_ms,
            first_chunk_ms: self.first_chunk_ms,
            stall_ms: self.stall_ms,
            is_progress: self
                .is_progress
                .clone()
                .map(|f| Box::new(move |c: &JsValue| (f.borrow_mut())(c)) as ProgressFn),
            propagate: self.propagate.clone(),
        }
    }
}

/// One resumable read between the reader's pulls.
struct Flow {
    input: JsValue,
    init: Option<RequestInit>,
    limits: Limits,
    classify: Option<Classify>,
    budget: Option<Rc<RetryBudget>>,
    hook: Option<ResumeFn>,
    run: RetryRun,
    resume: Resume,
    /// Aborts with the deadline, the caller's signals and the reader's cancel.
    whole: AbortSignal,
    event_stream: bool,
    cut: EventCut,
    content: bool,
    bytes: f64,
    chunks: Vec<Uint8Array>,
    last_id: Option<String>,
    ids: DeliveredIds,
    /// Events of a `Last-Event-ID` attempt before its first id (invariant 2).
    holding: Option<Vec<Event>>,
    live: Option<Live>,
    /// The failure the live attempt resumed from.
    resumed_from: Option<Error>,
    /// The event cap and the line cap (for the refusal's message).
    caps: (usize, usize),
    /// The cut refused the stream past a cap: the read ends with it once
    /// what came before is delivered.
    too_large: Option<Error>,
}

/// What a pull did.
enum Pulled {
    Chunk(Uint8Array),
    Closed(Option<Uint8Array>),
    Errored(JsValue),
}

impl Flow {
    fn budget_start(&mut self) -> Result<Start, Error> {
        let t = sys::now();
        Ok(match &self.budget {
            Some(b) => self.run.start(t, Some(&mut b.0.borrow_mut()))?,
            None => self.run.start(t, None)?,
        })
    }

    fn attempt_signal(&self) -> Result<(AbortController, AbortSignal), Error> {
        let controller = AbortController::new().map_err(Error::from)?;
        let signal = AbortSignal::any(&Array::of2(&controller.signal(), &self.whole));
        Ok((controller, signal))
    }

    /// The request again, with `Last-Event-ID` when given.
    async fn request(&self, last_event_id: Option<&str>) -> Result<(AbortController, Response), Error> {
        let (controller, signal) = self.attempt_signal()?;
        let init: RequestInit = match &self.init {
            Some(init) => Object::assign(&Object::new(), init).unchecked_into(),
            None => RequestInit::new(),
        };
        init.set_signal(Some(&signal));
        let request = self.input.dyn_ref::<Request>();
        if let Some(id) = last_event_id {
            let own = init.get_headers();
            let headers = match (own.is_undefined() || own.is_null(), request) {
                (false, _) => Headers::new_with_str_sequence_sequence(&own),
                (true, Some(request)) => Headers::new_with_headers(&request.headers()),
                (true, None) => Headers::new(),
            }
            .map_err(Error::Js)?;
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
        match fetch_once(&input, Some(&init), self.limits.once()).await {
            Ok(response) => Ok((controller, response)),
            Err(error) => {
                controller.abort();
                Err(error)
            }
        }
    }

    /// The caller's hook makes attempt `number`: `None` when it gives none.
    async fn call_hook(&mut self, number: u32) -> Result<Option<(AbortController, Response)>, Error> {
        let (controller, signal) = self.attempt_signal()?;
        let headers = Headers::new().map_err(Error::Js)?;
        let left = (self.limits.at - sys::now()).max(0.0);
        let formats = self.limits.propagate.clone().unwrap_or_else(|| vec![HeaderFormat::EdgeDeadlineRemainingMs]);
        for format in formats {
            headers.set(format.name(), &crate::core::headers::encode(format, left)?).map_err(Error::Js)?;
        }
        let resumed = Resumed {
            chunks: self.chunks.clone(),
            bytes: self.bytes,
            last_event_id: self.last_id.clone(),
            attempt: number,
            signal: signal.clone(),
            headers,
        };
        let Some(promise) = self.hook.as_mut().and_then(|hook| hook(resumed)) else {
            controller.abort();
            return Ok(None);
        };
        let waiting = Guard::new(None, || JsValue::UNDEFINED, &[&self.whole], false);
        let value = match waiting.race(JsFuture::from(promise)).await {
            Ok(Ok(value)) => value,
            Ok(Err(error)) => {
                controller.abort();
                return Err(Error::from(error));
            }
            Err(Ended::Cap(reason) | Ended::Parent(_, reason)) => {
                controller.abort();
                return Err(Error::from(reason));
            }
        };
        drop(waiting);
        let Some(response) = value.dyn_ref::<Response>() else {
            controller.abort();
            return Err(Error::InvalidType {
                param: "resume",
                code: "NOT_A_RESPONSE",
                message:
                    "'resume' must return a Promise of a Response (or None to end the stream): it gave something else"
                        .into(),
            });
        };
        let response = match response.body() {
            Some(body) if response.ok() => {
                let body = guard_body(body, self.limits.once(), controller.clone(), signal, self.event_stream)?;
                rewrap(response, &body)?
            }
            _ => Clone::clone(response),
        };
        Ok(Some((controller, response)))
    }

    /// How `error` ends an attempt.
    fn failure(&self, error: Error) -> Failed {
        if self.whole.aborted() {
            return Failed::fatal(Error::from(self.whole.reason()));
        }
        let how = match &error {
            Error::DeadlineExceeded { .. } | Error::InvalidArgument { .. } | Error::InvalidType { .. } => {
                return Failed::fatal(error)
            }
            Error::StreamStalled { .. } => AttemptFailure::Timeout,
            other => AttemptFailure::Error(self.classify.as_ref().map_or(Failure::Ambiguous, |c| c(other))),
        };
        Failed { how, error, wait: None, answer: None, fatal: false }
    }

    /// A non-ok answer: an error carrying the Response (`.response`, `.status`).
    fn status_failed(&self, response: Response, controller: AbortController) -> Failed {
        let status = response.status();
        let e = js_sys::Error::new(&format!("the upstream answered {} {}", status, response.status_text()));
        let _ = Reflect::set(&e, &JsValue::from_str("status"), &JsValue::from(status));
        let _ = Reflect::set(&e, &JsValue::from_str("response"), &response);
        let error = Error::Js(e.into());
        let failure = match &self.classify {
            Some(classify) => classify(&error),
            None => status_failure(status),
        };
        let wait = asked_wait(&error);
        Failed { how: AttemptFailure::Error(failure), error, wait, answer: Some((response, controller)), fatal: false }
    }

    /// Why a resumed attempt's ok `response` cannot be spliced onto what was
    /// delivered ([`resume_refusal`]), or `None`.
    fn refused(&self, next: Next, response: &Response) -> Option<&'static str> {
        let headers = response.headers();
        let event_stream = headers.get("content-type").ok().flatten().is_some_and(|t| is_event_stream(&t));
        let start = headers.get("content-range").ok().flatten().and_then(|v| content_range_start(&v));
        resume_refusal(next == Next::LastEventId, self.event_stream, response.status(), event_stream, start, self.bytes)
    }

    fn delivered(&self) -> Delivered {
        Delivered {
            content: self.content,
            event_stream: self.event_stream,
            last_event_id: self.last_id.as_deref().is_some_and(|id| !id.is_empty()),
            unchecked: !self.ids.checkable(),
        }
    }

    /// After `failed`: the next attempt's answer (an ok status), or the
    /// failure that ends the read.
    async fn recover(&mut self, mut failed: Failed) -> Result<Response, Failed> {
        loop {
            if failed.fatal {
                return Err(failed);
            }
            if self.whole.aborted() {
                failed.release();
                return Err(Failed::fatal(Error::from(self.whole.reason())));
            }
            let t = sys::now();
            let decision = match &self.budget {
                Some(b) => self.run.attempt_failed_waiting(t, failed.how, failed.wait, Some(&mut b.0.borrow_mut())),
                None => self.run.attempt_failed_waiting(t, failed.how, failed.wait, None),
            };
            let delay_ms = match decision {
                Ok(AfterFailure::Backoff { delay_ms }) => delay_ms,
                Ok(AfterFailure::Stop(_)) => return Err(failed),
                Err(error) => return Err(Failed::fatal(error.into())),
            };
            let (next, wait_ms) = self.resume.after_failure(self.delivered(), delay_ms, failed.wait);
            if next == Next::End {
                return Err(failed);
            }
            failed.release();
            if wait_ms > 0.0 {
                let sleeper = Guard::new(None, || JsValue::UNDEFINED, &[&self.whole], false);
                if let Err(Ended::Parent(_, reason)) = sleeper.race(sleep_until(sys::now() + wait_ms)).await {
                    return Err(Failed::fatal(Error::from(reason)));
                }
            }
            let number = match self.budget_start() {
                Ok(Start::Attempt { number, .. }) => number,
                Ok(Start::Stop(_)) => return Err(failed),
                Err(error) => return Err(Failed::fatal(error)),
            };
            let attempt = match next {
                Next::LastEventId => {
                    let id = self.last_id.clone();
                    self.request(id.as_deref()).await.map(Some)
                }
                Next::Hook => self.call_hook(number).await,
                Next::Retry | Next::End => self.request(None).await.map(Some),
            };
            failed = match attempt {
                Ok(Some((controller, response)))
                    if response.ok() && next != Next::Retry && self.refused(next, &response).is_some() =>
                {
                    // It cannot continue where the reader is (the core's rule): a failed attempt, never spliced.
                    let code = self.refused(next, &response).unwrap_or_default();
                    controller.abort();
                    if let Some(body) = response.body().filter(|b| !b.locked()) {
                        ignore_rejection(body.cancel());
                    }
                    let e = js_sys::Error::new(&format!(
                        "the resumed answer ({}) cannot continue the stream: {code}",
                        response.status()
                    ));
                    e.set_name("ResumeRefused");
                    let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(code));
                    let _ = Reflect::set(&e, &JsValue::from_str("status"), &JsValue::from(response.status()));
                    self.failure(Error::Js(e.into()))
                }
                Ok(Some((controller, response))) if response.ok() => {
                    self.holding = (next == Next::LastEventId).then(Vec::new);
                    if next != Next::Retry {
                        self.resumed_from = Some(failed.error);
                    }
                    self.live = Some(Live { controller, reader: None, done: false });
                    return Ok(response);
                }
                Ok(Some((controller, response))) => self.status_failed(response, controller),
                Ok(None) => return Err(failed),
                Err(error) => self.failure(error),
            };
        }
    }

    /// Reads the live attempt's body from now on.
    fn read(&mut self, response: &Response) {
        let reader = response.body().map(|b| b.get_reader().unchecked_into());
        if let Some(live) = self.live.as_mut() {
            live.reader = reader;
        }
    }

    /// One delivered event (or chunk): counted, its id kept, its bytes given on.
    fn deliver(&mut self, bytes: &[u8], content: bool, id: Option<String>, out: &mut Vec<u8>) {
        self.content |= content;
        self.bytes += bytes.len() as f64;
        if let Some(id) = id {
            if !id.is_empty() {
                self.ids.record(&id);
            }
            self.last_id = Some(id);
        }
        if self.hook.is_some() {
            self.chunks.push(Uint8Array::from(bytes));
        }
        out.extend_from_slice(bytes);
    }

    /// A chunk of the live attempt: what reaches the reader now, if
    /// anything; `Err(true)` when the upstream replayed an event already
    /// delivered, `Err(false)` when the chunk is not bytes.
    fn take(&mut self, chunk: &JsValue) -> Result<Vec<u8>, bool> {
        let Some(bytes) = chunk.dyn_ref::<Uint8Array>() else { return Err(false) };
        let bytes = bytes.to_vec();
        let mut out = Vec::new();
        if !self.event_stream {
            let content = !bytes.is_empty();
            self.deliver(&bytes, content, None, &mut out);
            return Ok(out);
        }
        let mut events = Vec::new();
        let refused = self.cut.push(&bytes, &mut events).err();
        for event in events {
            let Some(held) = self.holding.as_mut() else {
                self.deliver(&event.bytes, event.content, event.id, &mut out);
                continue;
            };
            let id = event.id.clone();
            held.push(event);
            match id {
                None => {}
                Some(id) if self.ids.contains(&id) => return Err(true),
                Some(_) => {
                    for e in self.holding.take().unwrap_or_default() {
                        self.deliver(&e.bytes, e.content, e.id, &mut out);
                    }
                }
            }
        }
        if let Some(refusal) = refused {
            // Ends the read at once, never retried; what a resumed stream held unchecked is dropped.
            self.holding = None;
            self.too_large = Some(self.refusal_error(refusal));
            self.live = None;
        }
        Ok(out)
    }

    /// The error a cap's refusal ends the read with (js/resume.js `StreamTooLarge`).
    fn refusal_error(&self, refusal: CutRefusal) -> Error {
        let cap = match refusal {
            CutRefusal::EventTooLarge => self.caps.0,
            CutRefusal::LineTooLong => self.caps.1,
        } as f64;
        let e = js_sys::Error::new(&refusal.message(cap).to_string());
        e.set_name("StreamTooLarge");
        let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(refusal.code()));
        let _ = Reflect::set(&e, &JsValue::from_str("maxBytes"), &JsValue::from(cap));
        Error::Js(e.into())
    }

    /// The live attempt's body ended: what was held goes to the reader.
    fn finish(&mut self) -> Option<Uint8Array> {
        let mut out = Vec::new();
        for e in self.holding.take().unwrap_or_default() {
            self.deliver(&e.bytes, e.content, e.id, &mut out);
        }
        let rest = self.cut.take_rest();
        self.deliver(&rest, false, None, &mut out);
        if let Some(live) = self.live.as_mut() {
            live.done = true;
        }
        let _ = self.run.succeeded(sys::now());
        (!out.is_empty()).then(|| Uint8Array::from(&out[..]))
    }

    /// Leaves the live attempt after a failure (invariants 1 and 2).
    fn leave(&mut self) {
        self.live = None;
        self.holding = None;
        self.cut.drop_partial();
    }

    /// Reads until something reaches the reader, recovering from failures.
    async fn pull(&mut self) -> Pulled {
        loop {
            if let Some(error) = self.too_large.take() {
                let _ = self.run.aborted(sys::now(), false);
                return Pulled::Errored(self.delivered_on(error.into()));
            }
            let Some(reader) = self.live.as_ref().and_then(|l| l.reader.clone()) else {
                return Pulled::Closed(self.finish());
            };
            let failed = match JsFuture::from(reader.read()).await {
                Ok(result) => {
                    if Reflect::get(&result, &JsValue::from_str("done")).ok() == Some(JsValue::TRUE) {
                        return Pulled::Closed(self.finish());
                    }
                    let chunk = Reflect::get(&result, &JsValue::from_str("value")).unwrap_or_default();
                    match self.take(&chunk) {
                        Ok(out) if out.is_empty() => continue,
                        Ok(out) => return Pulled::Chunk(Uint8Array::from(&out[..])),
                        Err(true) => {
                            // The upstream ignores Last-Event-ID: decide again from the failure it answered.
                            self.resume.replayed();
                            let error = self.resumed_from.clone().unwrap_or_else(|| {
                                Error::invalid("resume", "the upstream replayed events it had sent")
                            });
                            Failed {
                                how: AttemptFailure::Error(Failure::NotApplied),
                                error,
                                wait: None,
                                answer: None,
                                fatal: false,
                            }
                        }
                        Err(false) => Failed::fatal(Error::InvalidType {
                            param: "resume",
                            code: "NOT_BYTES",
                            message: "a body that continues a stream must be bytes: a chunk was not a Uint8Array"
                                .into(),
                        }),
                    }
                }
                Err(error) => self.failure(Error::from(error)),
            };
            self.leave();
            match self.recover(failed).await {
                Ok(response) => self.read(&response),
                Err(mut failed) => {
                    failed.release();
                    return Pulled::Errored(self.ending(failed));
                }
            }
        }
    }

    /// The reader's error for a read that ends with `failed` (invariant 5).
    fn ending(&self, failed: Failed) -> JsValue {
        let error = match failed.error {
            e if failed.fatal => return e.into(),
            e @ (Error::DeadlineExceeded { .. } | Error::StreamStalled { .. }) => e,
            e => match self.run.stopped() {
                Some(stop) => super::retry::failed(stop, reports(self.run.records()), Some(e)),
                None => Error::RetryFailed {
                    reason: NOT_RESUMABLE.into(),
                    message: not_resumable(self.bytes).to_string(),
                    attempts: reports(self.run.records()),
                    last: Some(Box::new(e)),
                    retry_after_ms: None,
                    remaining_ms: None,
                },
            },
        };
        if matches!(error, Error::DeadlineExceeded { .. }) {
            return error.into();
        }
        self.delivered_on(error.into())
    }

    /// `error` with how many bytes reached the reader (`deliveredBytes`).
    fn delivered_on(&self, error: JsValue) -> JsValue {
        let _ = Reflect::set(&error, &JsValue::from_str("deliveredBytes"), &JsValue::from(self.bytes));
        error
    }
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
    let stop = AbortController::new().map_err(Error::from)?;
    let mut signals = vec![once.deadline_signal.clone(), stop.signal()];
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
    let mut flow = Flow {
        input: input.clone(),
        init: init.map(|i| Object::assign(&Object::new(), i).unchecked_into()),
        limits: Limits {
            at,
            deadline_signal,
            first_byte_ms,
            first_chunk_ms,
            stall_ms,
            propagate,
            is_progress: is_progress.map(|f| Rc::new(RefCell::new(f))),
        },
        classify: retry.classify.take(),
        budget: retry.budget.take(),
        resume: Resume::new(hook.is_some()),
        hook,
        run,
        whole,
        event_stream: false,
        cut: EventCut::with_caps(caps.0, caps.1),
        content: false,
        bytes: 0.0,
        chunks: Vec::new(),
        last_id: None,
        ids: DeliveredIds::default(),
        holding: None,
        live: None,
        resumed_from: None,
        caps,
        too_large: None,
    };
    if let Start::Stop(_) = flow.budget_start()? {
        return Err(match flow.run.stopped() {
            Some(stop) => failed(stop, reports(flow.run.records()), None),
            None => Error::invalid("retry", "the retry stopped without a reason"),
        });
    }
    // Before the headers: retried, or the error (or the non-ok answer) as it is.
    let first = match flow.request(None).await {
        Ok((controller, response)) if response.ok() => {
            flow.live = Some(Live { controller, reader: None, done: false });
            Ok(response)
        }
        Ok((controller, response)) => Err(flow.status_failed(response, controller)),
        Err(error) => Err(flow.failure(error)),
    };
    let response = match first {
        Ok(response) => response,
        Err(failed) => match flow.recover(failed).await {
            Ok(response) => response,
            Err(Failed { answer: Some((response, _)), .. }) => return Ok(response),
            Err(failed) => return Err(failed.error),
        },
    };
    if response.body().is_none() {
        if let Some(live) = flow.live.as_mut() {
            live.done = true;
        }
        return Ok(response);
    }
    flow.event_stream = response.headers().get("content-type").ok().flatten().is_some_and(|t| is_event_stream(&t));
    flow.read(&response);
    let cell = Rc::new(RefCell::new(Some(flow)));
    let pull = {
        let cell = cell.clone();
        Closure::<dyn FnMut(ReadableStreamDefaultController) -> Promise>::new(
            move |out: ReadableStreamDefaultController| {
                let cell = cell.clone();
                future_to_promise(async move {
                    let Some(mut flow) = cell.borrow_mut().take() else { return Ok(JsValue::UNDEFINED) };
                    match flow.pull().await {
                        Pulled::Chunk(chunk) => {
                            let _ = out.enqueue_with_chunk(&chunk);
                            *cell.borrow_mut() = Some(flow);
                        }
                        Pulled::Closed(last) => {
                            drop(flow);
                            if let Some(chunk) = last {
                                let _ = out.enqueue_with_chunk(&chunk);
                            }
                            let _ = out.close();
                        }
                        Pulled::Errored(reason) => {
                            drop(flow);
                            out.error_with_e(&reason);
                        }
                    }
                    Ok(JsValue::UNDEFINED)
                })
            },
        )
        .into_js_value()
    };
    let cancel = Closure::<dyn FnMut(JsValue)>::new(move |reason: JsValue| {
        // The live attempt follows `stop`: its request is aborted with the reason.
        if !stop.signal().aborted() {
            stop.abort_with_reason(&reason);
        }
        let flow = cell.borrow_mut().take();
        drop(flow);
    })
    .into_js_value();
    rewrap(&response, &resume_source(&pull, &cancel))
}
