//! A Rust Worker that proxies an upstream with a deadline, a stall guard and
//! a fallback, built with workers-rs (`worker` 0.8.7) and edge-deadline's
//! `web` feature.
//!
//! `GET /?upstream=<url>` (or the `UPSTREAM` variable): the whole request has
//! `BUDGET_MS`; `FALLBACK_RESERVE_MS` of it is held back for the fallback, so
//! the proxied fetch gets the rest. The upstream must send its first body
//! chunk within `FIRST_CHUNK_MS` of its headers and never go quiet for
//! `STALL_MS` after it; when it does, or the proxy's share runs out, the
//! upstream request is aborted (the upstream sees its connection closed) and
//! the fallback answers, inside the deadline.
//!
//! `GET /resume?upstream=<url>`: the upstream's body streamed back as it
//! arrives, recovering inside `BUDGET_MS`. A request that fails before its
//! first content is made again; an event stream that goes quiet for
//! `STALL_MS` mid-answer is continued with `Last-Event-ID`, so the client
//! gets every event once, in order, without knowing anything broke. When it
//! cannot be (time runs out, the upstream fails for good), an event stream
//! ends with `event: error` and `data: {"fallback":true,"code":…,"reason":…}`
//! (our own words and a code, never the upstream's error), as the JavaScript
//! `relay` ends one: the status was sent already, and a body that just broke
//! would look to many clients like a complete answer.

use edge_deadline::web::{fetch_with_deadline, Deadline, Error as DeadlineError, FetchOptions, RetryOptions};
use futures_util::stream::{self, Stream};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::js_sys::{Object, Reflect, Uint8Array, JSON};
use worker::web_sys::{ReadableStream, ReadableStreamDefaultReader};
use worker::{event, Context, Env, Headers, Request, Response, Result};

/// The whole request's budget.
const BUDGET_MS: f64 = 1_500.0;
/// Held back from the proxy for the fallback answer.
const FALLBACK_RESERVE_MS: f64 = 300.0;
/// The longest wait for the upstream's first body chunk (after its headers).
const FIRST_CHUNK_MS: f64 = 400.0;
/// The longest silence tolerated in the upstream's body after its first chunk.
const STALL_MS: f64 = 200.0;
/// No attempt of a resumable read starts with less than this left.
const ATTEMPT_MIN_MS: f64 = 100.0;

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let url = req.url()?;
    let upstream = url
        .query_pairs()
        .find(|(k, _)| k == "upstream")
        .map(|(_, v)| v.into_owned())
        .or_else(|| env.var("UPSTREAM").ok().map(|v| v.to_string()));
    let Some(upstream) = upstream else {
        return Response::error("pass ?upstream=<url> or set UPSTREAM", 400);
    };
    if url.path() == "/resume" {
        return resume(&upstream).await;
    }
    // Inside the handler: in workerd a timer belongs to the request that made it.
    let deadline = Deadline::in_ms(BUDGET_MS).map_err(js)?;
    let proxy_share = deadline.reserve(FALLBACK_RESERVE_MS).map_err(js)?;
    match proxy(&upstream, &proxy_share).await {
        Ok(body) => {
            let mut res = Response::ok(body)?;
            res.headers_mut().set("x-edge-deadline", "upstream")?;
            Ok(res)
        }
        // Time ran out (a stall, the proxy's share ran out): degrade.
        Err(reason) if reason.is_timeout() => fallback(&reason, &deadline),
        // Anything else reaches the runtime as the package's branded error.
        Err(other) => Err(js(other)),
    }
}

/// The upstream's whole body, or why it could not be had in time.
async fn proxy(url: &str, deadline: &Deadline) -> std::result::Result<String, DeadlineError> {
    // The deadline's signal bounds the wait for headers; the stall guard the first chunk and the rest of the body.
    let options = FetchOptions::new(deadline).first_chunk_ms(FIRST_CHUNK_MS).stall_ms(STALL_MS);
    let res = fetch_with_deadline(&JsValue::from_str(url), None, options).await?;
    // A stall of the body rejects this read with StreamStalled (and aborts the upstream).
    let text = JsFuture::from(res.text()?).await?;
    Ok(text.as_string().unwrap_or_default())
}

/// The upstream's body as a stream that recovers: retried before its first
/// content, resumed after it (`Last-Event-ID` on an event stream).
async fn resume(upstream: &str) -> Result<Response> {
    let deadline = Deadline::in_ms(BUDGET_MS).map_err(js)?;
    let options = FetchOptions::new(&deadline)
        .first_chunk_ms(FIRST_CHUNK_MS)
        .stall_ms(STALL_MS)
        .retry(RetryOptions::new(ATTEMPT_MIN_MS));
    match fetch_with_deadline(&JsValue::from_str(upstream), None, options).await {
        // The body streams on after this returns; a failure it cannot recover from ends it (`ended`).
        Ok(res) => {
            let Some(body) = res.body() else { return Ok(Response::from(res)) };
            let event_stream =
                res.headers().get("content-type").ok().flatten().is_some_and(|t| t.starts_with("text/event-stream"));
            Ok(Response::from_stream(ended(body, event_stream))?
                .with_status(res.status())
                .with_headers(Headers(res.headers())))
        }
        Err(reason) if reason.is_timeout() => fallback(&reason, &deadline),
        Err(other) => Err(js(other)),
    }
}

/// `body`'s chunks as they come. When the read fails (after the status was
/// sent), an event stream ends with `event: error` carrying our words and a
/// code ([`DeadlineError::public_answer`]), on a fresh line; another body
/// errors, which is all HTTP can say in the middle of one.
fn ended(body: ReadableStream, event_stream: bool) -> impl Stream<Item = Result<Vec<u8>>> {
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    // The state: the reader and whether the last byte sent left a line open; `None` once ended.
    stream::unfold(Some((reader, false)), move |state| async move {
        let (reader, line_open) = state?;
        let next = match JsFuture::from(reader.read()).await {
            Ok(next) => next,
            Err(error) if event_stream => return Some((Ok(error_event(&DeadlineError::from(error), line_open)), None)),
            Err(error) => return Some((Err(worker::Error::from(error)), None)),
        };
        if Reflect::get(&next, &"done".into()).is_ok_and(|done| done.is_truthy()) {
            return None;
        }
        let bytes = Uint8Array::new(&Reflect::get(&next, &"value".into()).unwrap_or_default()).to_vec();
        let open = bytes.last().map_or(line_open, |b| *b != b'\n' && *b != b'\r');
        Some((Ok(bytes), Some((reader, open))))
    })
}

/// The `event: error` that ends an event stream: `{ fallback, code, reason }`, never the upstream's text.
fn error_event(reason: &DeadlineError, line_open: bool) -> Vec<u8> {
    let answer = reason.public_answer();
    let data = Object::new();
    let _ = Reflect::set(&data, &"fallback".into(), &JsValue::TRUE);
    let _ = Reflect::set(&data, &"code".into(), &answer.code.into());
    let _ = Reflect::set(&data, &"reason".into(), &answer.reason.as_str().into());
    let json = JSON::stringify(&data).ok().and_then(|s| s.as_string()).unwrap_or_default();
    let fresh = if line_open { "\n" } else { "" };
    format!("{fresh}event: error\ndata: {json}\n\n").into_bytes()
}

fn fallback(reason: &DeadlineError, deadline: &Deadline) -> Result<Response> {
    let mut res = Response::ok(format!("fallback: {reason}\n"))?;
    let headers = res.headers_mut();
    headers.set("x-edge-deadline", "fallback")?;
    headers.set("x-edge-deadline-reason", reason.name())?;
    headers.set("x-edge-deadline-remaining-ms", &format!("{:.0}", deadline.remaining()))?;
    Ok(res)
}

fn js(error: DeadlineError) -> worker::Error {
    worker::Error::from(JsValue::from(error))
}
