//! One request of [`fetch_with_deadline`](super::fetch_with_deadline) and its guarded body, and
//! what the plain fetch and each attempt of a resumable read (src/web/resume.rs) share: the
//! request's propagation headers and the Response around another body. Below both
//! src/web/fetch.rs (the API, which chooses between them) and src/web/resume.rs, above the stall
//! guard (src/web/stall.rs): the four form no circle.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, Headers, ReadableStream, Request, RequestInit, Response, ResponseInit};

use super::errors::StallPhase;
use super::headers::HeaderFormat;
use super::stall::{watch, ProgressFn, StallOptions};
use super::timers::{self, Timeout};
use super::{sys, Error};
use crate::core::headers;
use crate::core::sse::is_event_stream;
use crate::core::stall::{default_first_chunk_ms, Decision, Snapshot, StallConfig, StallError, Verdict, NO_LIMIT};

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
pub(super) fn add_budget_headers(
    input: &JsValue,
    init: &RequestInit,
    remaining: f64,
    formats: &[HeaderFormat],
) -> Result<(), Error> {
    if formats.is_empty() {
        return Ok(());
    }
    let out = request_headers(input, init)?;
    for &format in formats {
        if !out.has(format.name()).map_err(Error::Js)? {
            out.set(format.name(), &headers::encode(format, remaining)?).map_err(Error::Js)?;
        }
    }
    init.set_headers(&out);
    Ok(())
}

/// A copy of the headers a request of `input` with `init` sends: `init`'s,
/// or a `Request` input's when `init` has none.
pub(super) fn request_headers(input: &JsValue, init: &RequestInit) -> Result<Headers, Error> {
    let own = init.get_headers();
    match (own.is_undefined() || own.is_null(), input.dyn_ref::<Request>()) {
        (false, _) => Headers::new_with_str_sequence_sequence(&own),
        (true, Some(request)) => Headers::new_with_headers(&request.headers()),
        (true, None) => Headers::new(),
    }
    .map_err(Error::Js)
}

/// The propagation headers a request of `input` carries: the formats given
/// (sent anyway, as JavaScript's `propagate`), else the default header only
/// where it cannot change the request's CORS mode.
pub(super) fn budget_formats(input: &JsValue, propagate: Option<Vec<HeaderFormat>>) -> Vec<HeaderFormat> {
    match propagate {
        Some(formats) => formats,
        None if cross_origin_in_browser(input) => Vec::new(),
        None => vec![HeaderFormat::EdgeDeadlineRemainingMs],
    }
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
        let t = timers::now();
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
    let t0 = timers::now();
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
    let formats = budget_formats(input, propagate);
    let left = at - timers::now();
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
        first_chunk_ms: first_chunk_ms.unwrap_or_else(|| default_first_chunk_ms(Some(at), timers::now())),
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
        let t0 = timers::now();
        StallConfig::new(self.first_chunk_ms.unwrap_or(NO_LIMIT), self.stall_ms.unwrap_or(NO_LIMIT), Some(self.at))?
            .decide(&Snapshot::started(t0), t0)?;
        self.first_byte_ms.map(first_byte_config).transpose()
    }
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
