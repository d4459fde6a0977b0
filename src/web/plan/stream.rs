//! [`Plan::stream`]: a step that streams to the client, as `p.stream` in
//! `js/plan.js`. How the step's ending is named and what is sent next (the
//! fallback, an error event, nothing) is the core's
//! ([`crate::core::plan::stream_verdict`]); this file owns the step's guard
//! (cap and parents), the stall wrapper over its body, the read up to the
//! first progress chunk, and the body it hands back.
//!
//! # Invariants
//! 1. Headers go out with the first progress chunk (on an event stream, the
//!    first event); before it nothing is committed, and any failure is
//!    answered by the plan's fallback step, inside its reserve.
//! 2. The step is recorded once, when its body ends (closes, errors or is
//!    cancelled), or when it failed before content: the record has
//!    `first_chunk_ms` when content went out.
//! 3. After content, an event stream ends with `event: error` naming the
//!    reason (on a fresh line), then, with `trace`, `event: trace` carrying
//!    the trace; any other body errors.
//! 4. The step's guard (its cap timer and its listener on the deadline) and
//!    the stall wrapper are released when the body ends.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{
    AbortController, AbortSignal, ReadableStream, ReadableStreamDefaultController, ReadableStreamDefaultReader,
    Response, ResponseInit,
};

use super::super::guard::{Ended, Guard};
use super::super::sse::sse_progress;
use super::super::stall::{with_stall_timeout, ProgressFn, StallOptions};
use super::super::{timers, Error, StallPhase};
use super::{core, Decision, Outcome, Plan, Recorder, StepKind, StepResult};
use crate::core::plan::{stream_verdict, FallbackAnswer, FallbackScope, StreamEnd, StreamNext, StreamVerdict};
use crate::core::sse::is_event_stream;
use crate::core::stall::NO_LIMIT;

/// The answer when nothing was sent: `(reason, signal, budget_ms)`.
type FallbackFn = Box<dyn FnOnce(&Error, AbortSignal, f64) -> Result<Response, Error>>;
/// [`StreamStepOptions::on_error`]'s hook.
type ErrorFn = Rc<dyn Fn(&Error)>;

/// Options of [`Plan::stream`]: the stall limits (as
/// [`StallOptions`](super::super::StallOptions) and the JavaScript `relay`
/// name them), the final trace event, and the fallback's answer.
pub struct StreamStepOptions {
    first_chunk_ms: f64,
    stall_ms: f64,
    trace: bool,
    is_progress: Option<ProgressFn>,
    fallback: Option<FallbackFn>,
    on_error: Option<ErrorFn>,
}

impl Default for StreamStepOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamStepOptions {
    /// No limits but the step's cap, no trace event, the default fallback.
    pub fn new() -> Self {
        Self {
            first_chunk_ms: NO_LIMIT,
            stall_ms: NO_LIMIT,
            trace: false,
            is_progress: None,
            fallback: None,
            on_error: None,
        }
    }

    /// The longest wait for the first progress chunk, from the step's start
    /// (the wait for `run`'s response counts).
    pub fn first_chunk_ms(mut self, ms: f64) -> Self {
        self.first_chunk_ms = ms;
        self
    }

    /// The longest silence between progress chunks.
    pub fn stall_ms(mut self, ms: f64) -> Self {
        self.stall_ms = ms;
        self
    }

    /// End an event stream with `event: trace` carrying [`Plan::trace_json`].
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Which chunks are progress (default: on an event stream, events).
    pub fn is_progress(mut self, f: impl FnMut(&JsValue) -> Result<bool, Error> + 'static) -> Self {
        self.is_progress = Some(Box::new(f));
        self
    }

    /// The answer when nothing was sent, run as the plan's fallback step:
    /// `f(reason, signal, budget_ms)`. Default: a 504 when time ran out, a
    /// 502 for a failure, `{ fallback, step, code, reason, elapsedMs }` (our
    /// own words and a code, never the step's error).
    pub fn fallback(mut self, f: impl FnOnce(&Error, AbortSignal, f64) -> Result<Response, Error> + 'static) -> Self {
        self.fallback = Some(Box::new(f));
        self
    }

    /// Receives the step's error as it is when the step fails: before
    /// content, just before the fallback answers; after content, as the
    /// stream ends with `event: error` (or errors). The public client is
    /// told our own words and a code instead ([`Error::public_answer`]'s,
    /// in the step's words): the step's error can name URLs, hosts and keys,
    /// so log it here. The JavaScript `p.stream`'s `onError`.
    ///
    /// ```
    /// # #[wasm_bindgen_test::wasm_bindgen_test] fn doc() {
    /// use edge_deadline::web::StreamStepOptions;
    /// use std::{cell::RefCell, rc::Rc};
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// let seen = log.clone();
    /// // Your logger here: the step's error as it is, with its URLs, hosts and keys.
    /// let options = StreamStepOptions::new().on_error(move |error| seen.borrow_mut().push(error.to_string()));
    /// # let _ = options;
    /// # }
    /// # fn main() {}
    /// ```
    pub fn on_error(mut self, f: impl Fn(&Error) + 'static) -> Self {
        self.on_error = Some(Rc::new(f));
        self
    }
}

impl std::fmt::Debug for StreamStepOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamStepOptions")
            .field("first_chunk_ms", &self.first_chunk_ms)
            .field("stall_ms", &self.stall_ms)
            .field("trace", &self.trace)
            .field("fallback", &self.fallback.is_some())
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}

impl Plan<'_> {
    /// Runs the step `name` as the response to the client: `run(signal,
    /// cap_ms)` gives a `Response` whose body is streamed (its status and
    /// content type kept), guarded by the step's cap and the options' stall
    /// limits. Before any content went out, a failure (an error, a non-ok
    /// response, a stall, the cap, the client leaving, too little time to
    /// start) is answered by the plan's fallback step (the first declared
    /// after `name`). After content, an event stream ends with
    /// `event: error`, then with [`StreamStepOptions::trace`] `event: trace`.
    /// The JavaScript API's `p.stream` does the same.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name or a limit out of
    /// range; the fallback's own error. A shortage is never an error: the
    /// fallback answers it.
    ///
    /// ```no_run
    /// # use edge_deadline::web::{Deadline, Plan, StepKind, StepSpec, StreamStepOptions};
    /// # async fn demo(d: &Deadline) -> Result<web_sys::Response, edge_deadline::web::Error> {
    /// let plan = Plan::new(d, vec![
    ///     StepSpec::new("generate", StepKind::Mandatory, 200.0),
    ///     StepSpec::new("respond", StepKind::Fallback, 50.0),
    /// ])?;
    /// // `run` gets the step's signal and cap; a real one passes the signal to its fetch.
    /// let res = plan
    ///     .stream(
    ///         "generate",
    ///         |_signal, _cap_ms| async move {
    ///             web_sys::Response::new_with_opt_str(Some("data: hi\n\n")).map_err(edge_deadline::web::Error::from)
    ///         },
    ///         StreamStepOptions::new().first_chunk_ms(2_000.0).stall_ms(1_000.0).trace(true),
    ///     )
    ///     .await?;
    /// # Ok(res) }
    /// ```
    pub async fn stream<F, Fut>(&self, name: &str, run: F, options: StreamStepOptions) -> Result<Response, Error>
    where
        F: FnOnce(AbortSignal, f64) -> Fut,
        Fut: Future<Output = Result<Response, Error>>,
    {
        let StreamStepOptions { first_chunk_ms, stall_ms, trace, is_progress, fallback, on_error } = options;
        // Range checks before the step starts (the core names the parameter).
        crate::core::stall::StallConfig::new(first_chunk_ms, stall_ms, None)?;
        let index = self.plan.index_of(name)?;
        let at = self.plan.at();
        let t0 = timers::now();
        let decision = self.plan.decide_index(index, t0)?;
        let remaining = decision.remaining_ms();
        let parent = self.deadline.signal();
        let recorder = Recorder { records: self.records.clone(), on_step: self.on_step.clone() };
        // Not started: the client left, the step was refused, or nothing is left.
        let refused = match decision {
            _ if parent.aborted() => {
                let reason = Error::from(parent.reason());
                Some((self.outcome_of(&reason), reason))
            }
            Decision::Skip { .. } => Some((Outcome::Skipped, refusal(decision))),
            Decision::Insufficient { .. } => Some((Outcome::Insufficient, refusal(decision))),
            Decision::Run { cap_ms: 0.0, .. } => {
                let reason = if at <= t0 {
                    Error::DeadlineExceeded { at, late_by_ms: t0 - at }
                } else {
                    Error::StepTimeout { step: name.to_string(), cap_ms: 0.0 }
                };
                Some((Outcome::Deadline, reason))
            }
            Decision::Run { .. } => None,
        };
        if let Some((outcome, reason)) = refused {
            recorder.record(name, remaining, 0.0, t0, outcome, None);
            return self.stream_fallback(index, reason, fallback, trace, t0, on_error.clone()).await;
        }
        let cap = decision.cap_ms();
        let cap_at = t0 + cap;
        let cap_is_deadline = core::cap_is_deadline(cap_at, at);
        let step = name.to_string();
        // The upstream's controller: the stall wrapper aborts it; the guard follows it.
        let upstream = AbortController::new().map_err(Error::from)?;
        let guard = Guard::new(
            Some(cap_at),
            move || {
                if cap_is_deadline {
                    let t = timers::now();
                    Error::DeadlineExceeded { at, late_by_ms: if t > at { t - at } else { 0.0 } }.into()
                } else {
                    Error::StepTimeout { step, cap_ms: cap }.into()
                }
            },
            &[&parent, &upstream.signal()],
            true,
        );
        let signal = guard.signal();
        // The wait for the response counts against the first-chunk limit.
        let first_wait = async {
            if first_chunk_ms < NO_LIMIT {
                if let Ok(sleep) = super::super::sleep(first_chunk_ms) {
                    sleep.await;
                }
                Err(Error::StreamStalled {
                    phase: StallPhase::FirstChunk,
                    after_ms: timers::now() - t0,
                    chunks: 0.0,
                    bytes: 0.0,
                })
            } else {
                std::future::pending().await
            }
        };
        let work = async {
            let res = run(signal.clone(), cap).await?;
            if !res.ok() {
                if let Some(body) = res.body() {
                    settle(body.cancel());
                }
                let text = res.status_text();
                let status = res.status();
                return Err(Error::Js(
                    js_sys::Error::new(&if text.is_empty() {
                        format!("the step answered {status}")
                    } else {
                        format!("the step answered {status} {text}")
                    })
                    .into(),
                ));
            }
            Ok(res)
        };
        let got = guard.race(first_of(work, first_wait)).await;
        let end_of = |error: Option<&Error>, ended: Option<Ended>| -> StreamEnd {
            match ended {
                Some(Ended::Cap(_)) => StreamEnd::Cap,
                Some(Ended::Parent(0, reason)) => match Error::from(reason) {
                    Error::DeadlineExceeded { at: a, .. } if a == at => StreamEnd::Cap,
                    _ => StreamEnd::Parent,
                },
                Some(Ended::Parent(_, reason)) => match Error::from(reason) {
                    Error::StreamStalled { .. } => StreamEnd::Stalled,
                    _ => StreamEnd::Failed,
                },
                None => match error {
                    None => StreamEnd::Done,
                    Some(Error::StreamStalled { .. }) => StreamEnd::Stalled,
                    Some(_) => StreamEnd::Failed,
                },
            }
        };
        let reason_of = |error: Error, ended: &Option<Ended>| match ended {
            Some(Ended::Cap(r)) | Some(Ended::Parent(_, r)) => Error::from(r.clone()),
            None => error,
        };
        let response = match got {
            Ok(Ok(res)) => res,
            Ok(Err(error)) => {
                if matches!(error, Error::StreamStalled { .. }) {
                    upstream.abort_with_reason(&error.clone().into());
                }
                let ended = guard.ended();
                let end = end_of(Some(&error), ended.clone());
                let v = stream_verdict(end, false, cap_is_deadline);
                drop(guard);
                recorder.record(name, remaining, cap, t0, v.outcome, None);
                return self
                    .stream_fallback(index, reason_of(error, &ended), fallback, trace, t0, on_error.clone())
                    .await;
            }
            Err(ended) => {
                let end = end_of(None, Some(ended.clone()));
                let v = stream_verdict(end, false, cap_is_deadline);
                drop(guard);
                recorder.record(name, remaining, cap, t0, v.outcome, None);
                return self
                    .stream_fallback(
                        index,
                        reason_of(Error::Js(JsValue::UNDEFINED), &Some(ended)),
                        fallback,
                        trace,
                        t0,
                        on_error.clone(),
                    )
                    .await;
            }
        };
        let content_type = response.headers().get("content-type").ok().flatten();
        let sse = content_type.as_deref().is_some_and(is_event_stream);
        let body = match response.body() {
            Some(b) => b,
            None => ReadableStream::new().map_err(Error::from)?,
        };
        let elapsed = timers::now() - t0;
        let mut stall = StallOptions::new(
            if first_chunk_ms < NO_LIMIT { (first_chunk_ms - elapsed).max(1.0) } else { NO_LIMIT },
            stall_ms,
        )
        .controller(upstream.clone());
        if let Some(ct) = &content_type {
            stall = stall.content_type(ct);
        }
        let guarded = with_stall_timeout(body, stall)?;
        let reader: ReadableStreamDefaultReader = guarded.get_reader().unchecked_into();
        // Commit on the first progress chunk: what came before it (keep-alives) is held until then.
        let mut progress: ProgressFn = match is_progress {
            Some(f) => f,
            None if sse => Box::new(sse_progress()),
            None => Box::new(|chunk: &JsValue| Ok(chunk.is_truthy())),
        };
        let mut early = Vec::new();
        let mut done = false;
        let first = guard
            .race(async {
                loop {
                    let next = JsFuture::from(reader.read()).await.map_err(Error::from)?;
                    if js_sys::Reflect::get(&next, &"done".into()).ok().is_some_and(|d| d.is_truthy()) {
                        done = true;
                        return Ok(());
                    }
                    let value = js_sys::Reflect::get(&next, &"value".into()).unwrap_or(JsValue::UNDEFINED);
                    let is = progress(&value).unwrap_or(true);
                    early.push(value);
                    if is {
                        return Ok(());
                    }
                }
            })
            .await;
        let failed = match first {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some((end_of(Some(&error), guard.ended()), reason_of(error, &guard.ended()))),
            Err(ended) => {
                Some((end_of(None, Some(ended.clone())), reason_of(Error::Js(JsValue::UNDEFINED), &Some(ended))))
            }
        };
        if let Some((end, reason)) = failed {
            let v = stream_verdict(end, false, cap_is_deadline);
            settle(reader.cancel_with_reason(&reason.clone().into()));
            drop(guard);
            recorder.record(name, remaining, cap, t0, v.outcome, None);
            return self.stream_fallback(index, reason, fallback, trace, t0, on_error.clone()).await;
        }
        let first_chunk_ms = if early.is_empty() { None } else { Some(timers::now() - t0) };
        let state = Rc::new(RefCell::new(Body {
            reader,
            guard: Some(guard),
            upstream,
            recorder,
            step: name.to_string(),
            remaining,
            cap,
            t0,
            first_chunk_ms,
            cap_is_deadline,
            at,
            sse,
            trace,
            last_byte: None,
            verdict: None,
            on_error,
        }));
        if let Some(last) = early.last() {
            state.borrow_mut().note(last);
        }
        let out = body_stream(state, early, done)?;
        let headers = web_sys::Headers::new().map_err(Error::from)?;
        let _ = headers.set("cache-control", "no-store");
        if let Some(ct) = &content_type {
            let _ = headers.set("content-type", ct);
        }
        let init = ResponseInit::new();
        init.set_status(response.status());
        init.set_headers(&headers);
        Response::new_with_opt_readable_stream_and_init(Some(&out), &init).map_err(Error::from)
    }

    /// The answer when the streamed step `index` sent nothing: the plan's
    /// first fallback step after it runs the options' fallback (or the
    /// default answer); with no fallback step, that answers at once.
    async fn stream_fallback(
        &self,
        index: usize,
        reason: Error,
        fallback: Option<FallbackFn>,
        trace: bool,
        t0: f64,
        on_error: Option<ErrorFn>,
    ) -> Result<Response, Error> {
        if let Some(f) = on_error {
            f(&reason);
        }
        let steps = self.plan.steps();
        let name = steps[index].name().to_string();
        let answer: FallbackFn = match fallback {
            Some(f) => f,
            None => Box::new(move |reason, _signal, _budget| default_fallback(&name, reason, timers::now() - t0)),
        };
        let next = steps.iter().skip(index + 1).position(|s| s.kind() == StepKind::Fallback).map(|j| index + 1 + j);
        let res = match next {
            Some(j) => {
                let fb = steps[j].name().to_string();
                match self.run(&fb, |signal, budget| async move { answer(&reason, signal, budget) }).await? {
                    StepResult::Ran(res) => res,
                    StepResult::Skipped(_) => unreachable_skip()?,
                }
            }
            None => {
                let left = self.plan.at() - timers::now();
                answer(&reason, self.deadline.signal(), if left > 0.0 { left } else { 0.0 })?
            }
        };
        if !trace {
            return Ok(res);
        }
        let headers = web_sys::Headers::new_with_headers(&res.headers()).map_err(Error::from)?;
        let _ = headers.set("server-timing", &self.server_timing());
        let init = ResponseInit::new();
        init.set_status(res.status());
        init.set_headers(&headers);
        Response::new_with_opt_readable_stream_and_init(res.body().as_ref(), &init).map_err(Error::from)
    }

    /// The trace as a `Server-Timing` value, as the JavaScript `serverTiming()`.
    fn server_timing(&self) -> String {
        self.records
            .borrow()
            .iter()
            .map(|r| {
                let token: String = r
                    .step
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c) { c } else { '_' })
                    .collect();
                let desc = if r.cap_ms > 0.0 {
                    format!("{}, cap {} ms", r.outcome.as_str(), (r.cap_ms * 10.0).round() / 10.0)
                } else {
                    r.outcome.as_str().to_string()
                };
                format!("{token};dur={};desc=\"{desc}\"", (r.elapsed_ms * 10.0).round() / 10.0)
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A fallback step is never skipped (only optional steps are).
fn unreachable_skip() -> Result<Response, Error> {
    Err(Error::InvalidType { param: "name", code: "INVALID_TYPE", message: "a fallback step was skipped".into() })
}

/// The reason a refused step did not start.
fn refusal(decision: Decision) -> Error {
    match decision {
        Decision::Insufficient { available_ms, min_ms, .. } => {
            Error::InsufficientBudget { remaining_ms: available_ms, min_ms }
        }
        Decision::Skip { reason: core::SkipReason::BelowMinimum { available_ms, min_ms }, .. } => {
            Error::InsufficientBudget { remaining_ms: available_ms, min_ms }
        }
        _ => Error::InsufficientBudget { remaining_ms: 0.0, min_ms: 0.0 },
    }
}

/// Lets `promise` settle unobserved (a cancel of a stream that already
/// errored rejects with its error: nobody needs it, and Node would end the
/// process on the unhandled rejection).
fn settle(promise: Promise) {
    wasm_bindgen_futures::spawn_local(async move {
        let _ = JsFuture::from(promise).await;
    });
}

/// `a`, or `b` when it finishes first.
async fn first_of<T>(a: impl Future<Output = T>, b: impl Future<Output = T>) -> T {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(v) = a.as_mut().poll(cx) {
            return std::task::Poll::Ready(v);
        }
        b.as_mut().poll(cx)
    })
    .await
}

/// What the public client is told about `reason`: the core's
/// [`fallback_answer`](crate::core::plan::fallback_answer) (our own words and a code, never the step's error,
/// whose text may hold URLs, hosts, keys), as js/plan.js tells it.
fn public_reason(reason: &Error) -> FallbackAnswer {
    reason.answer_for(FallbackScope::Step)
}

/// The default fallback: the core's status, code and words ([`public_reason`]).
fn default_fallback(step: &str, reason: &Error, elapsed_ms: f64) -> Result<Response, Error> {
    let answer = public_reason(reason);
    let body = js_sys::Object::new();
    for (key, value) in [
        ("fallback", JsValue::TRUE),
        ("step", JsValue::from_str(step)),
        ("code", JsValue::from_str(answer.code)),
        ("reason", JsValue::from_str(&answer.reason)),
        ("elapsedMs", JsValue::from_f64(elapsed_ms.round())),
    ] {
        let _ = js_sys::Reflect::set(&body, &key.into(), &value);
    }
    let text = js_sys::JSON::stringify(&body).map_err(Error::from)?;
    let headers = web_sys::Headers::new().map_err(Error::from)?;
    let _ = headers.set("content-type", "application/json");
    let _ = headers.set("cache-control", "no-store");
    let init = ResponseInit::new();
    init.set_status(answer.status);
    init.set_headers(&headers);
    Response::new_with_opt_str_and_init(text.as_string().as_deref(), &init).map_err(Error::from)
}

/// The streamed body's state, shared by its pull and cancel.
struct Body {
    reader: ReadableStreamDefaultReader,
    /// Dropped (its timer and listener released) when the body ends.
    guard: Option<Guard>,
    upstream: AbortController,
    recorder: Recorder,
    step: String,
    remaining: f64,
    cap: f64,
    t0: f64,
    first_chunk_ms: Option<f64>,
    cap_is_deadline: bool,
    at: f64,
    sse: bool,
    trace: bool,
    /// The last byte sent (whether it left a line open), if any.
    last_byte: Option<u8>,
    verdict: Option<(StreamVerdict, Option<Error>)>,
    /// [`StreamStepOptions::on_error`].
    on_error: Option<ErrorFn>,
}

impl Body {
    fn note(&mut self, chunk: &JsValue) {
        let last = if let Some(s) = chunk.as_string() {
            s.as_bytes().last().copied()
        } else if let Some(bytes) = chunk.dyn_ref::<Uint8Array>() {
            let n = bytes.length();
            if n == 0 {
                return;
            }
            Some(bytes.get_index(n - 1))
        } else {
            None
        };
        if last.is_some() {
            self.last_byte = last;
        }
    }

    /// Records the step once, from how the body ended.
    fn end(&mut self, error: Option<Error>, cancelled: bool) -> (StreamVerdict, Option<Error>) {
        if let Some(v) = &self.verdict {
            return v.clone();
        }
        let ended = self.guard.as_ref().and_then(Guard::ended);
        let end = if cancelled {
            StreamEnd::Cancelled
        } else {
            match &ended {
                Some(Ended::Cap(_)) => StreamEnd::Cap,
                Some(Ended::Parent(0, reason)) => match Error::from(reason.clone()) {
                    Error::DeadlineExceeded { at, .. } if at == self.at => StreamEnd::Cap,
                    _ => StreamEnd::Parent,
                },
                Some(Ended::Parent(_, reason)) => match Error::from(reason.clone()) {
                    Error::StreamStalled { .. } => StreamEnd::Stalled,
                    _ => StreamEnd::Failed,
                },
                None => match &error {
                    None => StreamEnd::Done,
                    Some(Error::StreamStalled { .. }) => StreamEnd::Stalled,
                    Some(_) => StreamEnd::Failed,
                },
            }
        };
        let reason = match ended {
            Some(Ended::Cap(r)) | Some(Ended::Parent(_, r)) => Some(Error::from(r)),
            None => error,
        };
        let verdict = stream_verdict(end, true, self.cap_is_deadline);
        self.guard = None;
        self.recorder.record(&self.step, self.remaining, self.cap, self.t0, verdict.outcome, self.first_chunk_ms);
        self.verdict = Some((verdict, reason.clone()));
        (verdict, reason)
    }

    /// What follows the body's last chunk: the error event, the trace event.
    fn tail(&self, c: &ReadableStreamDefaultController, verdict: StreamVerdict, reason: Option<Error>) {
        let encode = |text: &str| Uint8Array::from(text.as_bytes());
        if verdict.next == StreamNext::Error {
            let reason = reason.unwrap_or(Error::Js(JsValue::UNDEFINED));
            if let Some(f) = &self.on_error {
                f(&reason);
            }
            if !self.sse {
                return c.error_with_e(&reason.into());
            }
            let data = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&data, &"step".into(), &JsValue::from_str(&self.step));
            let _ = js_sys::Reflect::set(&data, &"outcome".into(), &JsValue::from_str(verdict.outcome.as_str()));
            let answer = public_reason(&reason);
            let _ = js_sys::Reflect::set(&data, &"code".into(), &JsValue::from_str(answer.code));
            let _ = js_sys::Reflect::set(&data, &"reason".into(), &JsValue::from_str(&answer.reason));
            let json = js_sys::JSON::stringify(&data).ok().and_then(|s| s.as_string()).unwrap_or_default();
            let _ = c.enqueue_with_chunk(&encode(&crate::core::sse::error_event(self.last_byte, &json)));
        }
        if self.trace && self.sse {
            let trace = super::trace_json(&self.recorder.records.borrow());
            let _ = c.enqueue_with_chunk(&encode(&format!("event: trace\ndata: {trace}\n\n")));
        }
        let _ = c.close();
    }
}

#[wasm_bindgen(inline_js = r#"
export function planBody(early, done, onPull, onCancel) {
  return new ReadableStream({
    start(c) {
      for (const v of early) c.enqueue(typeof v === "string" ? new TextEncoder().encode(v) : v);
      if (done) return onPull(c, true);
    },
    pull: (c) => onPull(c, false),
    cancel: (reason) => onCancel(reason),
  }, { highWaterMark: 0 });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = planBody)]
    fn plan_body(early: &js_sys::Array, done: bool, on_pull: &JsValue, on_cancel: &JsValue) -> ReadableStream;
}

/// The body handed to the client: the early chunks, then the guarded
/// reader's, then the tail (invariant 3). The closures are owned by the
/// JavaScript stream.
fn body_stream(state: Rc<RefCell<Body>>, early: Vec<JsValue>, done: bool) -> Result<ReadableStream, Error> {
    let early_js: js_sys::Array = early.into_iter().collect();
    let pull_state = state.clone();
    let on_pull = Closure::<dyn FnMut(ReadableStreamDefaultController, bool) -> Promise>::new(
        move |c: ReadableStreamDefaultController, ended: bool| {
            let state = pull_state.clone();
            future_to_promise(async move {
                if ended {
                    let (v, reason) = state.borrow_mut().end(None, false);
                    state.borrow().tail(&c, v, reason);
                    return Ok(JsValue::UNDEFINED);
                }
                let read = state.borrow().reader.read();
                match JsFuture::from(read).await {
                    Err(error) => {
                        let (v, reason) = state.borrow_mut().end(Some(Error::from(error)), false);
                        state.borrow().tail(&c, v, reason);
                    }
                    Ok(next) => {
                        if js_sys::Reflect::get(&next, &"done".into()).ok().is_some_and(|d| d.is_truthy()) {
                            let (v, reason) = state.borrow_mut().end(None, false);
                            state.borrow().tail(&c, v, reason);
                        } else {
                            let mut value = js_sys::Reflect::get(&next, &"value".into()).unwrap_or(JsValue::UNDEFINED);
                            if let Some(s) = value.as_string() {
                                value = Uint8Array::from(s.as_bytes()).into();
                            }
                            state.borrow_mut().note(&value);
                            let _ = c.enqueue_with_chunk(&value);
                        }
                    }
                }
                Ok(JsValue::UNDEFINED)
            })
        },
    )
    .into_js_value();
    let on_cancel = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |reason: JsValue| {
        let mut s = state.borrow_mut();
        s.end(Some(Error::from(reason.clone())), true);
        s.upstream.abort_with_reason(&reason);
        s.reader.cancel_with_reason(&reason)
    })
    .into_js_value();
    Ok(plan_body(&early_js, done, &on_pull, &on_cancel))
}
