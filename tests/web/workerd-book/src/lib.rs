//! A Rust Worker for tests/web/workerd.test.mjs (workers-rs, like
//! examples/rust-worker): a `TimeoutBook` that records calls, flushes them to
//! the package's `TimeoutAggregator` Durable Object (a JavaScript Worker
//! behind the service binding `AGG`) and serves the fleet's timeout back.
//!
//! `POST /book?bucket=NAME&fallback=MS`, the body one call per line (`ms`
//! for a success, `timeout ms` or `error ms`): records every call into a new
//! book, flushes it, reads the timeout (the table read by the flush predates
//! the flush: the fallback), refreshes and reads it again. Answers
//! `{ "sent", "kept", "dropped", "left", "before", "after", "warnings" }`.
//! `GET /table` is the aggregator's table, through the same binding.
use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::web::{Aggregator, BookOptions, CallOutcome, Error as DeadlineError, TimeoutBook};
use wasm_bindgen::JsValue;
use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let url = req.url()?;
    if url.path() == "/table" {
        return env.service("AGG")?.fetch("https://timeout-aggregator/table", None).await;
    }
    if url.path() != "/book" {
        return Response::error("not found", 404);
    }
    let param = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
    let (Some(bucket), Some(fallback)) = (param("bucket"), param("fallback").and_then(|v| v.parse::<f64>().ok()))
    else {
        return Response::error("pass ?bucket=<name>&fallback=<ms>", 400);
    };
    let warnings = Rc::new(RefCell::new(Vec::<&'static str>::new()));
    let seen = warnings.clone();
    let agg: js_sys::Object = env.service("AGG")?.into_rpc();
    let book = TimeoutBook::new(
        BookOptions::new().aggregator(Aggregator::Fetcher(agg)).on_warning(move |w| seen.borrow_mut().push(w.code)),
    )
    .map_err(js)?;
    for line in req.text().await?.lines().filter(|l| !l.trim().is_empty()) {
        let (outcome, ms) = match line.split_once(' ') {
            Some(("timeout", ms)) => (CallOutcome::Timeout, ms),
            Some(("error", ms)) => (CallOutcome::Error, ms),
            _ => (CallOutcome::Ok, line),
        };
        let Ok(ms) = ms.trim().parse::<f64>() else {
            return Response::error(format!("not a latency: {line}"), 400);
        };
        book.record(&bucket, ms, outcome).map_err(js)?;
    }
    // In a Worker this runs in ctx.wait_until; awaited here so the answer can tell.
    let report = book.flush().await;
    let left = book.size();
    let before = book.timeout(&bucket, fallback).map_err(js)?;
    book.refresh().await;
    let after = book.timeout(&bucket, fallback).map_err(js)?;
    let warnings = warnings.borrow().iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
    let mut res = Response::ok(format!(
        r#"{{"sent":{},"kept":{},"dropped":{},"left":{left},"before":{before},"after":{after},"warnings":[{warnings}]}}"#,
        report.sent, report.kept, report.dropped
    ))?;
    res.headers_mut().set("content-type", "application/json")?;
    Ok(res)
}

fn js(error: DeadlineError) -> worker::Error {
    worker::Error::from(JsValue::from(error))
}
