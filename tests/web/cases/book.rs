//! TimeoutBook of the Rust API: the same core machine, names, defaults and
//! warning codes as js/book.js (tests/js/cases/book.js). The aggregator is a
//! small in-test one: a JS object with `fetch(request)` (as a Durable Object
//! stub is) that keeps what was POSTed and answers a table the case sets.
//! Timing is the subject of the refresh case, so the clock is fake.

use std::cell::RefCell;
use std::rc::Rc;

use edge_deadline::core::book::FlushBatch;
use edge_deadline::web::{Aggregator, BookOptions, BookWarning, CallOutcome, Refresh, TimeoutBook, TimeoutOptions};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::{settle, Ctx, FakeTime, Outcome};
use crate::ensure;

/// What the in-test aggregator saw and answers.
#[derive(Default)]
struct Agg {
    flushes: Vec<Vec<u8>>,
    status: u16,
    table_status: u16,
    /// The `buckets` of the table, as JSON text.
    buckets: String,
    table_reads: usize,
    /// A 200 answer to flushes naming refused buckets (JSON text), instead of `status`.
    refused: Option<String>,
}

/// An object with `fetch(request)` over `agg`, and the closure that must outlive it.
fn aggregator(agg: Rc<RefCell<Agg>>) -> (Object, Closure<dyn FnMut(web_sys::Request) -> Promise>) {
    let fetch = Closure::wrap(Box::new(move |request: web_sys::Request| {
        let agg = agg.clone();
        future_to_promise(async move {
            let init = web_sys::ResponseInit::new();
            if request.method() == "POST" {
                let body = JsFuture::from(request.array_buffer()?).await?;
                let bytes = js_sys::Uint8Array::new(&body).to_vec();
                let (status, refused) = (agg.borrow().status, agg.borrow().refused.clone());
                if status == 204 || refused.is_some() {
                    agg.borrow_mut().flushes.push(bytes);
                }
                if let Some(body) = refused {
                    init.set_status(200);
                    return Ok(web_sys::Response::new_with_opt_str_and_init(Some(&body), &init)?.into());
                }
                init.set_status(status);
                return Ok(web_sys::Response::new_with_opt_str_and_init(None, &init)?.into());
            }
            let (status, text) = {
                let mut a = agg.borrow_mut();
                a.table_reads += 1;
                let buckets = if a.buckets.is_empty() { "{}" } else { &a.buckets };
                (
                    a.table_status,
                    format!(
                        r#"{{"v":1,"derivedAt":"1970-01-01T00:00:00.000Z","windowMs":3600000,"windows":24,"q":0.99,"safety":1.5,"buckets":{buckets}}}"#
                    ),
                )
            };
            init.set_status(status);
            Ok(web_sys::Response::new_with_opt_str_and_init(Some(&text), &init)?.into())
        })
    }) as Box<dyn FnMut(web_sys::Request) -> Promise>);
    let o = Object::new();
    let _ = Reflect::set(&o, &"fetch".into(), fetch.as_ref());
    (o, fetch)
}

fn row(timeout_ms: &str, floor_ms: &str) -> String {
    row_of(timeout_ms, floor_ms, 5000)
}

fn row_of(timeout_ms: &str, floor_ms: &str, n: u32) -> String {
    format!(
        r#"{{"n":{n},"timeouts":0,"errors":0,"timeoutMs":{timeout_ms},"p50":null,"p99":null,"floorMs":{floor_ms},"falseTimeoutRate":null,"warnings":[]}}"#
    )
}

fn warnings() -> (Rc<RefCell<Vec<BookWarning>>>, impl Fn(&BookWarning) + 'static) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    (seen, move |w: &BookWarning| s.borrow_mut().push(w.clone()))
}

pub async fn a_book_sketches_successes_counts_the_rest_and_a_take_empties_it(_: &Ctx) -> Outcome {
    let (seen, on_warning) = warnings();
    let book =
        TimeoutBook::new(BookOptions::new().max_buckets(2.0).on_warning(on_warning)).map_err(|e| e.to_string())?;
    for ms in [10.0, 20.0, 30.0] {
        book.record("GET /a", ms, CallOutcome::Ok).map_err(|e| e.to_string())?;
    }
    book.record("GET /a", 5000.0, CallOutcome::Timeout).map_err(|e| e.to_string())?;
    book.record("GET /a", 3.0, CallOutcome::Error).map_err(|e| e.to_string())?;
    book.record("db", 1.0, CallOutcome::Error).map_err(|e| e.to_string())?;
    book.record("full", 1.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    ensure!(book.size() == 2);
    ensure!(seen.borrow().iter().map(|w| w.code).collect::<Vec<_>>() == ["BUCKETS_FULL"]);
    // Bad input names its parameter, as in JavaScript.
    let e = book.record("", 1.0, CallOutcome::Ok).err().ok_or("accepted")?;
    ensure!((e.param(), e.code(), e.name()) == (Some("bucket"), Some("OUT_OF_RANGE"), "RangeError"), "{e:?}");
    let e = book.record("GET /a", f64::NAN, CallOutcome::Ok).err().ok_or("accepted")?;
    ensure!((e.param(), e.code()) == (Some("ms"), Some("NOT_FINITE")), "{e:?}");
    let e = book.record("GET /a", -1.0, CallOutcome::Timeout).err().ok_or("accepted")?;
    ensure!((e.param(), e.code()) == (Some("ms"), Some("NEGATIVE")), "{e:?}");
    let e = book.timeout("GET /a", 0.0).err().ok_or("accepted")?;
    ensure!(e.param() == Some("fallbackMs"));
    let e = TimeoutBook::new(BookOptions::new().max_step_factor(0.5)).err().ok_or("accepted")?;
    ensure!(e.to_string() == "'maxStepFactor' must be a number between 1 and 1000: current value is 0.5", "{e}");
    ensure!(TimeoutBook::new(BookOptions::new().max_buckets(0.0)).err().and_then(|e| e.param()) == Some("maxBuckets"));
    let flushes = book.take_flush();
    ensure!(flushes.len() == 1 && book.size() == 0);
    let batch = FlushBatch::from_bytes(&flushes[0]).map_err(|e| e.to_string())?;
    let a = batch.buckets.iter().find(|b| b.name == "GET /a").ok_or("no GET /a")?;
    ensure!((a.successes.count(), a.timeouts, a.errors, a.in_force_ms) == (3, 1, 1, Some(5000.0)));
    let db = batch.buckets.iter().find(|b| b.name == "db").ok_or("no db")?;
    ensure!((db.successes.count(), db.errors) == (0, 1));
    let again = FlushBatch::from_bytes(&book.take_flush()[0]).map_err(|e| e.to_string())?;
    ensure!(again.buckets.is_empty(), "nothing counted twice");
    Ok(())
}

pub async fn a_book_flushes_to_its_aggregator_and_serves_the_table_within_the_step_and_the_floor(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let agg = Rc::new(RefCell::new(Agg { status: 204, table_status: 200, ..Agg::default() }));
    let (target, _fetch) = aggregator(agg.clone());
    let (seen, on_warning) = warnings();
    let options = BookOptions::new()
        .aggregator(Aggregator::Fetcher(target))
        .flush_every_ms(10_000.0)
        .refresh_every_ms(60_000.0)
        .max_stale_ms(300_000.0)
        .max_step_factor(2.0)
        .on_warning(on_warning);
    let book = TimeoutBook::new(options).map_err(|e| e.to_string())?;
    ensure!(book.timeout("GET /a", 5000.0).map_err(|e| e.to_string())? == 5000.0);
    ensure!(seen.borrow()[0].code == "NO_TABLE");
    ensure!(
        seen.borrow()[0].message
            == "timeout for 'GET /a': serving the fallback 5000 ms until the fleet's table arrives"
    );
    settle().await;
    ensure!(agg.borrow().table_reads == 1, "the first timeout() read the table in the background");
    // Flush: once per flushEveryMs; unreachable keeps the data.
    book.record("GET /a", 10.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    let r = book.flush().await;
    ensure!((r.sent, r.kept, r.dropped) == (1, 0, 0), "{r:?}");
    book.record("GET /a", 20.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    clock.jump(9_999.0);
    ensure!(book.flush().await.sent == 0 && book.size() == 1, "too soon");
    clock.jump(1.0);
    agg.borrow_mut().status = 503;
    let r = book.flush().await;
    ensure!((r.sent, r.kept) == (0, 1), "{r:?}");
    ensure!(
        seen.borrow().last().map(|w| (w.code, w.message.as_str()))
            == Some((
                "FLUSH_FAILED",
                "a flush could not be delivered (status 503); its data is kept for the next flush, in 'flushEveryMs' (10000 ms)"
            )),
        "a flush that could not be delivered is said, not only kept"
    );
    agg.borrow_mut().status = 204;
    book.record("GET /a", 30.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    clock.jump(10_000.0);
    ensure!(book.flush().await.sent == 1);
    let second = FlushBatch::from_bytes(&agg.borrow().flushes[1]).map_err(|e| e.to_string())?;
    ensure!(second.buckets[0].successes.count() == 2, "the kept 20 and the new 30, once each");
    // The table: a first value within ÷2 of the fallback (as derived here), then at most ÷2 per refresh, the floor within the step.
    agg.borrow_mut().buckets = format!(
        r#"{{"GET /a":{},"GET /b":{},"GET /c":{}}}"#,
        row("400", "null"),
        row("null", "null"),
        row_of("300", "null", 999)
    );
    book.refresh().await;
    ensure!(book.timeout("GET /a", 500.0).map_err(|e| e.to_string())? == 400.0);
    ensure!(book.timeout("GET /b", 700.0).map_err(|e| e.to_string())? == 700.0);
    ensure!(seen.borrow().last().map(|w| w.code) == Some("FEW_SAMPLES"));
    // 999 successes: below the 1 000 a p99 needs, so the derived 300 is not served.
    ensure!(book.timeout("GET /c", 600.0).map_err(|e| e.to_string())? == 600.0);
    ensure!(seen
        .borrow()
        .last()
        .map(|w| w.code.to_owned() + &w.message)
        .is_some_and(|m| m.starts_with("FEW_SAMPLES") && m.contains("'GET /c'")));
    agg.borrow_mut().buckets = format!(r#"{{"GET /a":{}}}"#, row("20", "null"));
    book.refresh().await;
    book.refresh().await;
    ensure!(book.timeout("GET /a", 5000.0).map_err(|e| e.to_string())? == 100.0);
    agg.borrow_mut().buckets = format!(r#"{{"GET /a":{}}}"#, row("20", "80"));
    book.refresh().await;
    ensure!(book.timeout("GET /a", 5000.0).map_err(|e| e.to_string())? == 80.0, "the floor");
    // Unreachable: served until maxStaleMs, then the fallback.
    agg.borrow_mut().table_status = 503;
    clock.jump(299_999.0);
    ensure!(book.timeout("GET /a", 5000.0).map_err(|e| e.to_string())? == 80.0);
    clock.jump(1.0);
    ensure!(book.timeout("GET /a", 5000.0).map_err(|e| e.to_string())? == 5000.0, "stale");
    settle().await;
    let codes: Vec<&str> = seen.borrow().iter().map(|w| w.code).collect();
    ensure!(codes.contains(&"STALE") && codes.contains(&"REFRESH_FAILED"), "{codes:?}");
    ensure!(clock.pending() == 0, "a book arms no timer");
    Ok(())
}

pub async fn plan_steps_and_retries_record_into_a_book(_: &Ctx) -> Outcome {
    use edge_deadline::web::{retry, Deadline, Error, Plan, RetryOptions, StepKind, StepSpec};
    let book = TimeoutBook::new(BookOptions::new().on_warning(|_| {})).map_err(|e| e.to_string())?;
    let d = Deadline::in_ms(10_000.0).map_err(|e| e.to_string())?;
    let plan = Plan::new(
        &d,
        vec![
            StepSpec::new("search", StepKind::Optional, 1.0).preferred(300.0),
            StepSpec::new("broken", StepKind::Optional, 1.0).preferred(300.0),
        ],
    )
    .map_err(|e| e.to_string())?;
    plan.run_recorded("search", &book, |_, _| async { Ok("hits") }).await.map_err(|e| e.to_string())?;
    let failed = plan.run_recorded("broken", &book, |_, _| async { Err::<(), _>(Error::Js("boom".into())) }).await;
    ensure!(failed.is_err());
    let n = Rc::new(std::cell::Cell::new(0));
    let calls = n.clone();
    let options = RetryOptions::new(1.0).idempotent(true).backoff(1.0, 1.0, 0.0).record(&book, "GET /profile");
    let value = retry(&d, options, move |_, _| {
        calls.set(calls.get() + 1);
        let first = calls.get() == 1;
        async move {
            if first {
                Err(Error::Js("reset".into()))
            } else {
                Ok(7)
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    ensure!(value == 7 && n.get() == 2);
    let batch = FlushBatch::from_bytes(&book.take_flush()[0]).map_err(|e| e.to_string())?;
    let got: Vec<String> = batch
        .buckets
        .iter()
        .map(|b| format!("{}:{}/{}/{}", b.name, b.successes.count(), b.timeouts, b.errors))
        .collect();
    ensure!(got == ["GET /profile:1/0/1", "broken:0/0/1", "search:1/0/0"], "{got:?}");
    Ok(())
}

pub async fn a_flush_answered_with_some_buckets_refused_drops_those_only(_: &Ctx) -> Outcome {
    let agg = Rc::new(RefCell::new(Agg { status: 204, table_status: 503, ..Agg::default() }));
    agg.borrow_mut().refused = Some(
        r#"{"refused":[{"bucket":"junk-new","code":"TOO_MANY_BUCKETS","message":"a window holds at most 1024 buckets"},{"bucket":"not-ours","code":"TOO_MANY_BUCKETS"}]}"#.into(),
    );
    let (target, _fetch) = aggregator(agg.clone());
    let (seen, on_warning) = warnings();
    let options =
        BookOptions::new().aggregator(Aggregator::Fetcher(target)).refresh_every_ms(1e9).on_warning(on_warning);
    let book = TimeoutBook::new(options).map_err(|e| e.to_string())?;
    book.record("api", 10.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    book.record("junk-new", 10.0, CallOutcome::Ok).map_err(|e| e.to_string())?;
    let r = book.flush().await;
    ensure!((r.sent, r.kept, r.dropped) == (1, 0, 1), "the honest bucket is sent, only the refused one dropped: {r:?}");
    ensure!(book.size() == 0);
    let refused: Vec<String> =
        seen.borrow().iter().filter(|w| w.code == "FLUSH_REFUSED").map(|w| w.message.clone()).collect();
    ensure!(
        refused.len() == 1 && refused[0].contains("junk-new") && refused[0].contains("TOO_MANY_BUCKETS"),
        "{refused:?}"
    );
    Ok(())
}

/// As JavaScript's `timeout(bucket, { fallbackMs, ctx })`: a refresh the call starts is handed to the
/// ctx (a Worker's `ctx.wait_until`), already running; awaiting it is awaiting the table's read.
pub async fn a_refresh_timeout_starts_is_handed_to_its_ctx(_: &Ctx) -> Outcome {
    let clock = FakeTime::install();
    let agg = Rc::new(RefCell::new(Agg {
        status: 204,
        table_status: 200,
        buckets: format!(r#"{{"GET /a":{}}}"#, row("400", "null")),
        ..Agg::default()
    }));
    let (target, _fetch) = aggregator(agg.clone());
    let options =
        BookOptions::new().aggregator(Aggregator::Fetcher(target)).refresh_every_ms(60_000.0).on_warning(|_| {});
    let book = TimeoutBook::new(options).map_err(|e| e.to_string())?;
    let handed: Rc<RefCell<Vec<Refresh>>> = Rc::new(RefCell::new(Vec::new()));
    let keep = handed.clone();
    let wait_until = move |refresh: Refresh| keep.borrow_mut().push(refresh);
    let timeout = |book: &TimeoutBook, ctx: &dyn Fn(Refresh)| {
        book.timeout("GET /a", TimeoutOptions::new(500.0).ctx(ctx)).map_err(|e| e.to_string())
    };
    // No table yet: a refresh is due, handed to the ctx, and the fallback is served meanwhile.
    ensure!(timeout(&book, &wait_until)? == 500.0);
    ensure!(handed.borrow().len() == 1, "{} refreshes handed to the ctx", handed.borrow().len());
    let refresh = handed.borrow_mut().pop().ok_or("nothing handed")?;
    refresh.await;
    ensure!(agg.borrow().table_reads == 1, "the handed refresh read the table");
    ensure!(timeout(&book, &wait_until)? == 400.0, "the fleet's value, once the handed refresh completed");
    ensure!(handed.borrow().is_empty(), "no refresh due: nothing handed");
    // A ctx that drops what it is handed does not stop the refresh: it started at once, as in JavaScript.
    clock.jump(60_000.0);
    ensure!(timeout(&book, &|_: Refresh| {})? == 400.0);
    settle().await;
    ensure!(agg.borrow().table_reads == 2, "{} table reads", agg.borrow().table_reads);
    // A number is the fallback alone, as before.
    ensure!(book.timeout("GET /a", 500.0).map_err(|e| e.to_string())? == 400.0);
    ensure!(clock.pending() == 0, "a book arms no timer");
    Ok(())
}
