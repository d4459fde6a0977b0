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
//! gets every event once, in order, without knowing anything broke.

use edge_deadline::web::{fetch_with_deadline, Deadline, Error as DeadlineError, FetchOptions, RetryOptions};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use worker::{event, Context, Env, Request, Response, Result};

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
        // The body streams on after this returns; a failure it cannot recover from errors it.
        Ok(res) => Ok(Response::from(res)),
        Err(reason) if reason.is_timeout() => fallback(&reason, &deadline),
        Err(other) => Err(js(other)),
    }
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
